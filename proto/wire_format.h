// Protobuf's wire format, by hand: what the protobuf-free encoders (chunk_encoder.h,
// trace_encoder.h) need to write the messages of trace.proto. They write what protobuf's own
// serializer writes: fields in number order; a singular scalar or string equal to its default left
// out; repeated scalars packed; a repeated element always written, even when empty; a map entry
// with both its key and its value.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

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

// A varint field, written whatever its value (a map entry's key and value).
inline void number(std::string& out, uint32_t field, uint64_t v) {
  tag(out, field, kVarint);
  varint(out, v);
}

// Singular uint32/uint64/bool: left out when 0.
inline void scalar(std::string& out, uint32_t field, uint64_t v) {
  if (v != 0) number(out, field, v);
}

// A length-delimited value (string, bytes, nested message, packed column), always written.
inline void bytes(std::string& out, uint32_t field, std::string_view value) {
  tag(out, field, kLengthDelimited);
  varint(out, value.size());
  out.append(value);
}

// Singular string: left out when empty.
inline void text(std::string& out, uint32_t field, std::string_view value) {
  if (!value.empty()) bytes(out, field, value);
}

// Protobuf refuses to parse a string field that is not UTF-8, which would make a whole chunk or
// header unreadable: each byte that starts no well-formed sequence (Unicode 3.9) becomes U+FFFD.
std::string valid_utf8(std::string_view text);

}  // namespace memreplay::wire
