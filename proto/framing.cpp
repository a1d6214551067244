#include "proto/framing.h"

#include <zlib.h>

namespace memreplay::format {

uint32_t payload_crc(std::string_view payload) {
  // zlib's crc32 takes a uInt length: feed large payloads in pieces.
  uLong crc = crc32(0L, Z_NULL, 0);
  const auto* data = reinterpret_cast<const Bytef*>(payload.data());
  size_t left = payload.size();
  while (left > 0) {
    const auto piece = static_cast<uInt>(left > (1u << 30) ? (1u << 30) : left);
    crc = crc32(crc, data, piece);
    data += piece;
    left -= piece;
  }
  return static_cast<uint32_t>(crc);
}

void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void put_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint32_t get_u32(const unsigned char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

uint64_t get_u64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

std::string encode_record(RecordType type, std::string_view payload) {
  std::string out;
  out.reserve(kRecordHeaderBytes + payload.size());
  put_u32(out, static_cast<uint32_t>(type));
  put_u32(out, static_cast<uint32_t>(payload.size()));
  put_u32(out, payload_crc(payload));
  out.append(payload);
  return out;
}

std::optional<RecordHeader> decode_record_header(const unsigned char* bytes) {
  const uint32_t type = get_u32(bytes);
  const uint32_t length = get_u32(bytes + 4);
  if (type < 1 || type > 3 || length > kMaxRecordBytes) return std::nullopt;
  return RecordHeader{static_cast<RecordType>(type), length, get_u32(bytes + 8)};
}

std::string encode_trailer(uint64_t footer_record_offset) {
  std::string out;
  put_u64(out, footer_record_offset);
  out.append(kTrailerMagic);
  return out;
}

}  // namespace memreplay::format
