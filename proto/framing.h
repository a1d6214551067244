// Byte layout of a .mrt file around the messages of trace.proto, and the format version.
//
//   offset 0   "MRTRACE1"                                   file magic, 8 bytes
//   then       record*                                      header, chunks..., footer
//   then       u64 footer_record_offset, "MRTEND\0\0"        trailer, 16 bytes (finished files only)
//
//   record:    +--------+--------+--------+----------------------+
//              | type   | length | crc32  | payload (length B)   |   u32 fields, little-endian
//              +--------+--------+--------+----------------------+
//   HEADER and FOOTER payloads are a TraceHeader and a Footer in protobuf's wire format; a CHUNK
//   payload is a zstd frame holding a Chunk in that wire format. crc32 (zlib) covers the payload, so a torn or flipped
//   record is detected.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace memreplay::format {

inline constexpr std::string_view kFileMagic{"MRTRACE1", 8};
inline constexpr std::string_view kTrailerMagic{"MRTEND\0\0", 8};
inline constexpr size_t kRecordHeaderBytes = 12;
inline constexpr size_t kTrailerBytes = 16;
// No record is bigger than this: a larger length field means the file is damaged.
inline constexpr uint32_t kMaxRecordBytes = 256u << 20;
// The format version, its one definition (TraceHeader.format_major/format_minor). Readers accept
// every minor version of their major and refuse a newer major.
inline constexpr uint32_t kFormatMajor = 1;  // bump on every incompatible change
// Bump the minor on a compatible addition (1: pools, 2: devices' cap, 3: allocations under a CUDA
// graph capture flagged).
inline constexpr uint32_t kFormatMinor = 3;

enum class RecordType : uint32_t { header = 1, chunk = 2, footer = 3 };

struct RecordHeader {
  RecordType type;
  uint32_t length;
  uint32_t crc;
};

uint32_t payload_crc(std::string_view payload);
// Type + length + crc + payload, ready to append to a file.
std::string encode_record(RecordType type, std::string_view payload);
// Decodes the 12 header bytes; nullopt if the type is unknown or the length is implausible.
std::optional<RecordHeader> decode_record_header(const unsigned char* bytes);
std::string encode_trailer(uint64_t footer_record_offset);

void put_u32(std::string& out, uint32_t v);
void put_u64(std::string& out, uint64_t v);
uint32_t get_u32(const unsigned char* p);
uint64_t get_u64(const unsigned char* p);

}  // namespace memreplay::format
