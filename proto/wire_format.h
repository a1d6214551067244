// Protobuf's wire format, by hand: enough of it to write the messages of proto/trace.proto
// without linking protobuf (see live_trace_writer.h for why). proto3 rules: a singular scalar or
// string equal to its default is left out; repeated scalars are packed; a repeated element is
// always written, even when empty.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace memreplay::wire {

enum WireType : uint32_t { kVarint = 0, kLengthDelimited = 2 };

inline void varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

inline void tag(std::string& out, uint32_t field, WireType type) { varint(out, (uint64_t{field} << 3) | type); }

inline uint64_t zigzag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }

// Singular uint32/uint64/bool: left out when 0.
inline void scalar(std::string& out, uint32_t field, uint64_t v) {
  if (v == 0) return;
  tag(out, field, kVarint);
  varint(out, v);
}

// A length-delimited value (string, bytes, nested message), always written.
inline void bytes(std::string& out, uint32_t field, std::string_view value) {
  tag(out, field, kLengthDelimited);
  varint(out, value.size());
  out.append(value);
}

// Singular string: left out when empty.
inline void text(std::string& out, uint32_t field, std::string_view value) {
  if (!value.empty()) bytes(out, field, value);
}

// Packed repeated uint32/uint64 (zigzag for sint64); left out when empty.
template <typename T>
void packed(std::string& out, uint32_t field, const std::vector<T>& values, bool zigzag_encode = false) {
  if (values.empty()) return;
  std::string body;
  body.reserve(values.size() * 2);
  for (const T v : values) varint(body, zigzag_encode ? zigzag(static_cast<int64_t>(v)) : static_cast<uint64_t>(v));
  bytes(out, field, body);
}

// Protobuf rejects strings that are not UTF-8: each byte that starts no well-formed sequence
// becomes U+FFFD (as TraceWriter does).
std::string valid_utf8(std::string_view text);

}  // namespace memreplay::wire
