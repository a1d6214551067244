// ChunkEncoder: the one encoder of trace.proto's Chunk, without protobuf. Every writer of .mrt
// files goes through it (via TraceEncoder, trace_encoder.h), so the event columns, their delta
// encoding and the interning are written in one place, the way trace.proto's Chunk describes them:
//
//   columns   kind, time_delta, device, stream, address_delta, size, stack, flags, aux, pool: one
//             value per event, packed varints (zigzag for the two deltas); flags, aux and pool left
//             out when all zero in the chunk
//   tables    strings, frames and stacks are interned file-wide; a chunk carries the entries first
//             used since the previous chunk, with ids continuing from there (stack ids from 1)
//   annotations  one per annotation event, in order; that event's aux is its index in the chunk
//
// The bytes are what protobuf's serializer writes for the same Chunk (wire_format.h), so the same
// events make the same chunks whichever writer they went through; tests/writer_contract_test.cpp
// parses them back with the generated classes. Columns are appended to as events come, so encode() only joins
// them. The columns can also be cut off on their own (take_rows()) and joined with the tables later
// (encode(rows, ...)): an importer encodes a chunk's rows before it knows every stack the file
// will hold (recorder/import/chunks_ahead.h). Not thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "proto/event.h"
#include "proto/frame_text.h"

namespace memreplay::format {

// What the footer's chunk index says of an encoded chunk (trace.proto's ChunkIndexEntry, less the
// offset).
struct ChunkSummary {
  uint64_t first_event = 0;
  uint64_t event_count = 0;
  uint64_t min_time_ns = 0;  // 0 for a chunk without events (only table entries)
  uint64_t max_time_ns = 0;
};

// A chunk's event columns, encoded apart from the tables (ChunkEncoder::take_rows()).
struct ChunkRows {
  ChunkSummary summary;
  uint64_t base_time_ns = 0;
  std::string columns;  // fields kind to aux, as encode() writes them
  std::string pool;  // field 19, or empty when every event is in the default pool
  bool columns_kept = true;  // false: columns and pool were dropped, only `compressed` holds them

  // The chunk these rows make with no table entries of its own (ChunkEncoder::encode_alone),
  // compressed at `level`: what encode(rows) writes where the first ids are still these then.
  struct Compressed {
    std::string bytes;
    int level = 0;
    uint32_t first_string = 0, first_frame = 0, first_stack = 0;
  };
  std::optional<Compressed> compressed;
};

class ChunkEncoder {
 public:
  ChunkEncoder();

  // Stack id (>= 1) for these frames, innermost first; equal stacks get equal ids.
  uint32_t intern_stack(std::span<const FrameText> frames);
  // Adds an event to the chunk; an annotation event gets no metadata. Throws std::logic_error for
  // an invalid kind or a stack id not interned, leaving the chunk as it was.
  void add(const Event& event);
  // Adds an annotation event with its metadata; its aux is assigned here. Throws std::logic_error
  // for an event of another kind.
  void add_annotation(const Event& event, const KeyValues& metadata);

  size_t chunk_events() const { return events_; }
  // True when there are events or new table entries to encode.
  bool pending() const;
  // True when table entries or annotations wait for the next chunk.
  bool pending_tables() const;
  // The serialized Chunk of what was added since the last call (valid until the next call), and
  // starts the next chunk.
  std::string_view encode(ChunkSummary& summary);
  // The events added since the last call as rows, and starts the next chunk's rows; the interning
  // tables stay for the encode(rows) that will carry them. Throws std::logic_error if an
  // annotation event is among them (its metadata belongs to the tables' chunk).
  ChunkRows take_rows();
  // The serialized Chunk of rows taken earlier (the next in order) with the table entries new since
  // the last encode(): the bytes encode() would have written had the rows' events been added last.
  std::string_view encode(const ChunkRows& rows, ChunkSummary& summary);
  // The chunk of rows without table entries, its first ids those that follow every entry interned
  // so far: what encode(rows) writes for a chunk after the one that carries the tables, if nothing
  // is interned in between. `compressed` gets those ids (its bytes and level are the caller's).
  std::string encode_alone(const ChunkRows& rows, ChunkRows::Compressed& compressed) const;
  // Whether rows.compressed, at `level`, has the first ids that follow every entry interned so far.
  bool compressed_matches(const ChunkRows& rows, int level) const;
  // ... and no table entries wait for a chunk: it is what encode(rows) would write next.
  bool compressed_is_next(const ChunkRows& rows, int level) const;

  // File-wide totals, for the footer.
  uint64_t events_added() const { return first_event_ + events_; }
  uint32_t string_count() const { return static_cast<uint32_t>(string_ids_.size()); }
  uint32_t frame_count() const { return static_cast<uint32_t>(frame_ids_.size()); }
  uint32_t stack_count() const { return static_cast<uint32_t>(stack_ids_.size()); }
  const std::array<uint64_t, kEventKindCount>& events_per_kind() const { return events_per_kind_; }

 private:
  // Packed varints of one column, appended to without a bounds check per byte.
  class Column {
   public:
    void put(uint64_t value) {
      if (capacity_left() < 10) grow();
      auto* p = reinterpret_cast<uint8_t*>(bytes_.data()) + used_;
      while (value >= 0x80) {
        *p++ = static_cast<uint8_t>(value | 0x80);
        value >>= 7;
      }
      *p++ = static_cast<uint8_t>(value);
      used_ = static_cast<size_t>(p - reinterpret_cast<uint8_t*>(bytes_.data()));
    }
    std::string_view bytes() const { return {bytes_.data(), used_}; }
    void clear() { used_ = 0; }

   private:
    size_t capacity_left() const { return bytes_.size() - used_; }
    void grow();
    std::string bytes_;
    size_t used_ = 0;
  };
  // kPool is field 19, written after the tables (protobuf's order is by field number).
  enum ColumnIndex { kKind, kTimeDelta, kDevice, kStream, kAddressDelta, kSize, kStack, kFlags, kAux, kPool, kColumns };

  struct FrameKey {
    uint32_t filename, line, name;
    friend bool operator==(const FrameKey&, const FrameKey&) = default;
  };
  struct FrameKeyHash {
    size_t operator()(const FrameKey& k) const;
  };
  struct StackHash {
    size_t operator()(const std::vector<uint32_t>& frames) const;
  };
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  void check(const Event& event) const;
  // Moves the chunk's columns into `rows` (reusing its buffers) and starts the next chunk's.
  void rows_into(ChunkRows& rows);
  // trace.proto's Chunk of `rows`, with these first ids and, when `tables`, the entries new since the last encode.
  void put_chunk(std::string& out, const ChunkRows& rows, uint32_t first_string, uint32_t first_frame,
                 uint32_t first_stack, bool tables) const;
  void add_row(const Event& event, uint64_t aux);
  uint32_t intern_string(std::string_view text);
  uint32_t intern_frame(const FrameText& frame);

  // Interning, file-wide. The entries new since the last chunk wait in new_*, encoded.
  std::unordered_map<std::string, uint32_t, StringHash, std::equal_to<>> string_ids_;
  std::unordered_map<FrameKey, uint32_t, FrameKeyHash> frame_ids_;
  std::unordered_map<std::vector<uint32_t>, uint32_t, StackHash> stack_ids_;
  std::vector<uint32_t> stack_scratch_;  // frame ids of the stack being interned
  std::string new_strings_, new_frames_, new_stacks_, annotations_;  // repeated fields 13, 15, 17, 18
  size_t new_string_count_ = 0, new_frame_count_ = 0, new_stack_count_ = 0, annotation_count_ = 0;

  // The chunk being filled.
  std::array<Column, kColumns> columns_;
  size_t events_ = 0;
  uint64_t first_event_ = 0;
  uint64_t base_time_ = 0, previous_time_ = 0, previous_address_ = 0;
  uint64_t min_time_ = 0, max_time_ = 0;
  bool has_flags_ = false, has_aux_ = false, has_pool_ = false;
  uint32_t first_string_ = 0, first_frame_ = 0, first_stack_ = 1;
  std::string encoded_, scratch_;
  ChunkRows rows_;  // encode()'s own rows, reused

  std::array<uint64_t, kEventKindCount> events_per_kind_{};
};

}  // namespace memreplay::format
