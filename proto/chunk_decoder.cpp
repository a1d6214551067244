#include "proto/chunk_decoder.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>

#include <google/protobuf/stubs/logging.h>

#include "proto/trace_encoder.h"

namespace memreplay {
namespace {

// The event columns, fields 3..11 of Chunk in field order.
enum Column : int { kKind, kTimeDelta, kDevice, kStream, kAddressDelta, kSize, kStack, kFlags, kAux, kColumns };
constexpr int kFirstColumnField = proto::Chunk::kKindFieldNumber;
static_assert(proto::Chunk::kTimeDeltaFieldNumber == kFirstColumnField + int{kTimeDelta} &&
              proto::Chunk::kDeviceFieldNumber == kFirstColumnField + int{kDevice} &&
              proto::Chunk::kStreamFieldNumber == kFirstColumnField + int{kStream} &&
              proto::Chunk::kAddressDeltaFieldNumber == kFirstColumnField + int{kAddressDelta} &&
              proto::Chunk::kSizeFieldNumber == kFirstColumnField + int{kSize} &&
              proto::Chunk::kStackFieldNumber == kFirstColumnField + int{kStack} &&
              proto::Chunk::kFlagsFieldNumber == kFirstColumnField + int{kFlags} &&
              proto::Chunk::kAuxFieldNumber == kFirstColumnField + int{kAux});
constexpr const char* kColumnNames[kColumns] = {"kind", "time_delta", "device", "stream", "address_delta",
                                                "size", "stack",      "flags",  "aux"};

struct Span {
  const uint8_t* begin = nullptr;
  const uint8_t* end = nullptr;
  size_t size() const { return static_cast<size_t>(end - begin); }
};
using Columns = std::array<Span, kColumns>;
// The pool column (field 19) comes after the tables, apart from the others.
constexpr int kPoolField = proto::Chunk::kPoolFieldNumber;
struct ChunkColumns {
  Columns columns;
  Span pool;
};

bool read_varint(const uint8_t*& p, const uint8_t* end, uint64_t& value) {
  uint64_t result = 0;
  for (int shift = 0; shift < 64 && p < end; shift += 7) {
    const uint8_t byte = *p++;
    result |= uint64_t{byte & 0x7fu} << shift;
    if (byte < 0x80) {
      value = result;
      return true;
    }
  }
  return false;
}

// Splits a serialized Chunk into its packed columns and the bytes of every other field, which
// protobuf then parses (they are small: tables and scalars). Columns must be packed and appear
// once, as every protobuf serializer writes them. Returns an error, or nullptr.
const char* split_chunk(std::string_view bytes, ChunkColumns& split, std::string& other_fields) {
  Columns& columns = split.columns;
  columns = {};
  split.pool = {};
  other_fields.clear();
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  const uint8_t* const end = p + bytes.size();
  while (p < end) {
    const uint8_t* const field_start = p;
    uint64_t tag, length = 0, ignored;
    if (!read_varint(p, end, tag)) return "chunk has a malformed field tag";
    // The value after the tag: a varint (type 0), a length and that many bytes (2), or a fixed 8
    // or 4 bytes (1, 5). Groups (3, 4) are not proto3.
    const uint64_t type = tag & 7;
    if (type == 0 && !read_varint(p, end, ignored)) return "chunk has a malformed varint";
    if (type == 2 && !read_varint(p, end, length)) return "chunk has a malformed length";
    if (type == 1 || type == 5) length = type == 1 ? 8 : 4;
    if (type > 2 && type != 5) return "chunk has a field of an unsupported wire type";
    if (length > static_cast<uint64_t>(end - p)) return "chunk has a field running past its end";
    const uint64_t column = (tag >> 3) - kFirstColumnField;
    if (column < kColumns) {
      if ((tag & 7) != 2) return "chunk has an unpacked column";
      if (columns[column].begin != nullptr) return "chunk has a column twice";
      columns[column] = Span{p, p + length};
    } else if ((tag >> 3) == kPoolField) {
      if ((tag & 7) != 2) return "chunk has an unpacked column";
      if (split.pool.begin != nullptr) return "chunk has a column twice";
      split.pool = Span{p, p + length};
    } else {
      other_fields.append(reinterpret_cast<const char*>(field_start), static_cast<size_t>(p + length - field_start));
    }
    p += length;
  }
  return nullptr;
}

// Reads a column's varints one after another. Values of up to 8 bytes are decoded without
// branching on their length, which varies from value to value and would mispredict; a column of
// only one-byte values (device, stream, stack are often all zero) is read byte by byte.
class ColumnReader {
 public:
  ColumnReader() = default;
  ColumnReader(Span column, size_t values)
      : p_(column.begin),
        end_(column.end),
        one_byte_(column.size() == values && std::all_of(p_, end_, [](uint8_t b) { return b < 0x80; })) {}

  // How many values next<false>() may read before it could load past the column's end: each
  // takes at most 10 bytes (a varint's longest) and loads 8.
  size_t unchecked_reads() const { return static_cast<size_t>(end_ - p_) / (one_byte_ ? 1 : 10); }

  template <bool kChecked>
  uint64_t next() {
    static_assert(std::endian::native == std::endian::little);
    if (one_byte_) return *p_++;
    if (!kChecked || end_ - p_ >= 8) {
      uint64_t word;
      std::memcpy(&word, p_, 8);
      if (const uint64_t stops = ~word & 0x8080808080808080ull; stops != 0) [[likely]] {
        const int bits = std::countr_zero(stops) + 1;  // through the last byte's stop bit
        p_ += bits / 8;
        uint64_t x = word & (~0ull >> (64 - bits)) & 0x7f7f7f7f7f7f7f7full;
        x = (x & 0x007f007f007f007full) | ((x & 0x7f007f007f007f00ull) >> 1);
        x = (x & 0x00003fff00003fffull) | ((x & 0x3fff00003fff0000ull) >> 2);
        return (x & 0x000000000fffffffull) | ((x & 0x0fffffff00000000ull) >> 4);
      }
    }
    // A failed read has moved at most 10 bytes on: later unchecked reads stay inside the column.
    uint64_t value = 0;
    if (!read_varint(p_, end_, value)) ok_ = false;
    return value;
  }
  // True if the column held exactly the values read.
  bool whole() const { return ok_ && p_ == end_; }

 private:
  const uint8_t* p_ = nullptr;
  const uint8_t* end_ = nullptr;
  bool one_byte_ = false;
  bool ok_ = true;
};
using ColumnReaders = std::array<ColumnReader, kColumns>;

uint64_t unzigzag(uint64_t v) { return (v >> 1) ^ (0 - (v & 1)); }

// One event at a time, all columns together: their decodes are independent, so the CPU overlaps
// them (column by column, each value would wait for the previous one's length). Runs of events
// far from every column's end skip the end checks.
template <bool kHasFlags, bool kHasAux>
void decode_rows(const uint8_t* kinds, ColumnReaders& r, uint64_t time, Event* events, size_t n) {
  uint64_t address = 0;
  auto decode = [&]<bool kChecked>(size_t i) {
    Event& e = events[i];
    e.kind = static_cast<EventKind>(kinds[i]);
    e.time_ns = time += unzigzag(r[kTimeDelta].next<kChecked>());
    e.device = static_cast<uint32_t>(r[kDevice].next<kChecked>());
    e.stream = r[kStream].next<kChecked>();
    e.address = address += unzigzag(r[kAddressDelta].next<kChecked>());
    e.size = r[kSize].next<kChecked>();
    e.stack = static_cast<uint32_t>(r[kStack].next<kChecked>());
    e.flags = kHasFlags ? static_cast<uint32_t>(r[kFlags].next<kChecked>()) : 0;
    e.aux = kHasAux ? r[kAux].next<kChecked>() : 0;
    e.pool = kDefaultPool;  // decode_pools() sets it where the chunk has a pool column
  };
  for (size_t i = 0; i < n;) {
    size_t run = n - i;
    for (int column = kTimeDelta; column <= kStack; ++column) run = std::min(run, r[column].unchecked_reads());
    if (kHasFlags) run = std::min(run, r[kFlags].unchecked_reads());
    if (kHasAux) run = std::min(run, r[kAux].unchecked_reads());
    if (run == 0) {
      decode.template operator()<true>(i++);
      continue;
    }
    for (const size_t end = i + run; i < end; ++i) decode.template operator()<false>(i);
  }
}

std::string at_event(const proto::Chunk& chunk, size_t i, const std::string& what) {
  return "event " + std::to_string(chunk.first_event() + i) + ": " + what;
}

// The ids inside the chunk's own table entries.
std::optional<std::string> check_tables(const proto::Chunk& c) {
  if (c.first_stack_id() == 0) return "chunk's first_stack_id is 0";
  const uint64_t string_end = uint64_t{c.first_string_id()} + static_cast<uint64_t>(c.strings_size());
  const uint64_t frame_end = uint64_t{c.first_frame_id()} + static_cast<uint64_t>(c.frames_size());
  for (const proto::Frame& f : c.frames())
    if (f.filename() >= string_end || f.name() >= string_end) return "frame names string id out of range";
  for (const proto::Stack& s : c.stacks())
    for (uint32_t frame : s.frames())
      if (frame >= frame_end) return "stack names frame id " + std::to_string(frame) + ", out of range";
  for (const proto::Annotation& a : c.annotations()) {
    if (a.keys_size() != a.values_size()) return "annotation has unequal keys and values";
    for (uint32_t id : a.keys())
      if (id >= string_end) return "annotation key string id out of range";
    for (uint32_t id : a.values())
      if (id >= string_end) return "annotation value string id out of range";
  }
  return std::nullopt;
}

// The pool column, where there is one: one value per event, each a pool id (<= 65535).
std::optional<std::string> decode_pools(Span column, const proto::Chunk& chunk, std::vector<Event>& out) {
  const uint8_t* p = column.begin;
  for (size_t i = 0; i < out.size(); ++i) {
    uint64_t pool = 0;
    if (!read_varint(p, column.end, pool)) return std::string("column pool does not hold one value per event");
    if (pool > 0xffff) return at_event(chunk, i, "pool id " + std::to_string(pool) + " out of range");
    out[i].pool = static_cast<uint16_t>(pool);
  }
  if (p != column.end) return std::string("column pool does not hold one value per event");
  return std::nullopt;
}

// Fills out with the chunk's events, undoing the delta encoding, and checks kinds, stack ids and
// annotation indexes.
std::optional<std::string> decode_columns(const Columns& c, const proto::Chunk& chunk, std::vector<Event>& out) {
  static_assert(kEventKindCount <= 128, "kinds are decoded as one-byte varints");
  const size_t n = c[kKind].size();
  if (n > kMaxEventsPerChunk)
    return "chunk holds " + std::to_string(n) + " events, more than the " + std::to_string(kMaxEventsPerChunk) +
           " a writer may put in one";
  const uint8_t* const kinds = c[kKind].begin;
  bool bad_kind = false;
  size_t annotation_events = 0;
  for (size_t i = 0; i < n; ++i) {
    bad_kind |= kinds[i] - 1u >= kEventKindCount - 1u;
    annotation_events += kinds[i] == static_cast<uint8_t>(EventKind::annotation);
  }
  if (bad_kind) {
    for (size_t i = 0; i < n; ++i)
      if (!is_valid_event_kind(kinds[i])) return at_event(chunk, i, "invalid event kind " + std::to_string(kinds[i]));
  }

  ColumnReaders readers;
  // The format lets the flags and aux columns be left out when all zero.
  const bool has_flags = c[kFlags].size() > 0, has_aux = c[kAux].size() > 0;
  for (int column = kTimeDelta; column < kColumns; ++column) readers[column] = ColumnReader(c[column], n);
  out.resize(n);
  auto decode = has_flags ? (has_aux ? decode_rows<true, true> : decode_rows<true, false>)
                          : (has_aux ? decode_rows<false, true> : decode_rows<false, false>);
  decode(kinds, readers, chunk.base_time_ns(), out.data(), n);
  for (int column = kTimeDelta; column < kColumns; ++column)
    if ((column != kFlags || has_flags) && (column != kAux || has_aux) && !readers[column].whole())
      return std::string("column ") + kColumnNames[column] + " does not hold one value per event";

  const uint64_t stack_end = uint64_t{chunk.first_stack_id()} + static_cast<uint64_t>(chunk.stacks_size());
  uint32_t max_stack = 0;
  for (const Event& e : out) max_stack = std::max(max_stack, e.stack);
  if (max_stack >= stack_end) {
    for (size_t i = 0; i < n; ++i)
      if (out[i].stack >= stack_end)
        return at_event(chunk, i, "stack id " + std::to_string(out[i].stack) + " out of range");
  }
  if (annotation_events != static_cast<size_t>(chunk.annotations_size()))
    return "chunk has " + std::to_string(chunk.annotations_size()) + " annotations for " +
           std::to_string(annotation_events) + " annotation events";
  uint64_t next_annotation = 0;
  for (size_t i = 0; i < n && next_annotation < annotation_events; ++i)
    if (out[i].kind == EventKind::annotation && out[i].aux != next_annotation++)
      return at_event(chunk, i, "annotation index out of order");
  return std::nullopt;
}

}  // namespace

std::optional<std::string> ChunkDecoder::decode(std::string_view bytes, proto::Chunk& chunk,
                                                std::vector<Event>& events) {
  ChunkColumns columns;
  if (const char* error = split_chunk(bytes, columns, other_fields_)) return error;
  {
    google::protobuf::LogSilencer quiet;  // its log line for invalid UTF-8 would precede our error
    if (!chunk.ParseFromString(other_fields_)) return "chunk does not parse (or holds a string that is not UTF-8)";
  }
  if (auto error = check_tables(chunk)) return error;
  if (auto error = decode_columns(columns.columns, chunk, events)) return error;
  if (columns.pool.begin != nullptr) return decode_pools(columns.pool, chunk, events);
  return std::nullopt;
}

}  // namespace memreplay
