// TraceReader: reads a .mrt file (format: proto/trace.proto, proto/framing.h) chunk by chunk.
//
// Memory stays bounded: one chunk's bytes and events at a time, plus the interning tables
// (strings, frames, stacks), which grow with the number of distinct stacks, not with events.
//
// Damage and truncation. Opening reads the header, the footer (found through the trailer) and
// the 12-byte header of every record, so it knows at once which chunks are whole:
//   - a file cut off mid-write (no trailer, a torn last record, a last record failing its CRC) is
//     read up to its last whole chunk: complete() is false and truncation_note() says where it
//     stopped;
//   - anything else malformed (bad magic, unknown record type, a CRC mismatch in a record that is
//     not the last, a chunk that does not decompress or parse, inconsistent columns, an invalid
//     event kind, an id out of range, a newer major version) throws InputError naming the file
//     and the byte offset of the record at fault. After it throws, the reader is unusable.
//
// Stack tables are append-only across the file, so stack_frames() for an id of a chunk not yet
// read (or skipped by a seek) reads ahead the chunks in between for their tables only.
//
// Ceilings, so that a small hostile file cannot cost unbounded memory: a chunk holds at most
// kMaxEventsPerChunk events (what writers may write) and decompresses to at most kMaxChunkBytes,
// and to at most kMaxChunkExpansion times its compressed size plus 64 KiB (real chunks expand
// 10-100 times, very regular ones a few hundred; 64 MiB of zeros expands 30,000 times). A chunk
// over either is damage. And a whole file holds at most event_budget(file size) events, about
// kMaxEventsPerByte per byte: real traces hold about one (the shared ones 0.3-1.0), but 300
// chunks each within the ceilings fit 19.7 M events in 515 KB, which would take replay minutes
// and `info` gigabytes. A file over it is refused at open when its footer says so, else at the
// chunk that goes over.
//
// Not thread-safe; a file still being written is read as it was when opened.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proto/chunk_decoder.h"
#include "proto/event.h"
#include "proto/frame_text.h"
#include "proto/trace.pb.h"

struct ZSTD_DCtx_s;

namespace memreplay {

class TraceReader {
 public:
  static constexpr uint64_t kMaxChunkBytes = uint64_t{128} << 20;
  static constexpr uint64_t kMaxChunkExpansion = 1024;
  static constexpr uint64_t kChunkExpansionAllowance = 64 << 10;  // tiny chunks expand more
  static constexpr uint64_t kMaxEventsPerByte = 4;
  static constexpr uint64_t kMinEventBudget = uint64_t{1} << 20;  // tiny files, tests
  static constexpr uint64_t event_budget(uint64_t file_bytes) {
    return kMinEventBudget + kMaxEventsPerByte * file_bytes;
  }

  // Opens the file and checks its framing; throws InputError when it cannot be read.
  explicit TraceReader(std::string path);
  ~TraceReader();
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;

  const std::string& path() const { return path_; }
  const proto::TraceHeader& header() const { return header_; }
  // The footer (totals, chunk index), or nullptr when the file was not finished.
  const proto::Footer* footer() const { return footer_ ? &*footer_ : nullptr; }
  bool complete() const { return footer_.has_value(); }
  // For an incomplete file: why, and where reading stops. nullopt for a complete file.
  std::optional<std::string> truncation_note() const;

  // What an incomplete file lost, for the one-line warning of replay, compare and fit.
  struct Loss {
    uint64_t whole_events = 0;  // events in the whole chunks: the last whole one is whole_events - 1
    uint64_t whole_chunks = 0;
    uint64_t lost_bytes = 0;  // bytes after the last whole chunk (a torn record, garbage)
    uint64_t file_bytes = 0;
    std::string reason;  // truncation_note()
  };
  // nullopt for a complete file. Counting the events decodes the chunks not yet read (once).
  std::optional<Loss> loss();

  // Replaces out with the next chunk's events (skipping chunks without events); false at the end.
  bool next_batch(std::vector<Event>& out);
  // Index in the trace of the first event of the last batch.
  uint64_t batch_first_event() const { return batch_first_event_; }
  // Metadata of an annotation event of the last batch; throws std::out_of_range for any other.
  const KeyValues& annotation(const Event& event) const;

  // Positions at the first chunk whose latest event is at or after time_ns (through the footer's
  // index; without a footer, by decoding chunks from the start). The next batch is that whole
  // chunk, so it may begin with earlier events.
  void seek_to_time(uint64_t time_ns);
  void rewind() { position_ = 0; }

  // Frames of a stack, innermost first; empty for stack id 0. Throws std::out_of_range for an id
  // the trace does not have.
  std::vector<FrameText> stack_frames(uint32_t stack_id);

  // Every event of the file (tests, small tools): the whole trace in memory.
  static std::vector<Event> read_all(const std::string& path);

 private:
  struct DCtxDeleter {
    void operator()(ZSTD_DCtx_s* ctx) const;
  };
  // A chunk record; first_event, event_count and max_time_ns are known from the footer or, in
  // an unfinished file, once the chunk has been decoded.
  struct ChunkRef {
    uint64_t offset = 0;  // of the record
    uint32_t length = 0;  // of the payload
    bool known = false;
    uint64_t first_event = 0;
    uint64_t event_count = 0;
    uint64_t max_time_ns = 0;
  };
  struct FrameIds {
    uint32_t filename, line, name;
  };

  [[noreturn]] void fail(uint64_t offset, const std::string& what) const;
  void read_exact(uint64_t offset, size_t size, void* out) const;
  void read_header();
  void read_footer();
  void index_records();
  bool last_record_is_torn();
  void check_footer_index();
  void check_event_budget(uint64_t offset, uint64_t events) const;

  void decode_chunk(size_t index, proto::Chunk& chunk, std::vector<Event>& out);
  std::string_view decompress(const ChunkRef& ref);
  void learn_chunk(size_t index, const proto::Chunk& chunk, const std::vector<Event>& events);
  void absorb_tables(const ChunkRef& ref, const proto::Chunk& chunk);
  void read_tables_through(size_t end_chunk);
  void resolve_annotations(size_t index);

  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
  uint64_t data_start_ = 0;  // first byte after the header record
  proto::TraceHeader header_;
  std::optional<proto::Footer> footer_;
  uint64_t footer_offset_ = 0;
  std::string stop_note_;  // for an unfinished file: where and why reading stops

  std::vector<ChunkRef> chunks_;
  size_t position_ = 0;  // next chunk next_batch() decodes

  // Reused across chunks so reading allocates nothing per chunk once warm.
  std::vector<unsigned char> record_;
  std::vector<char> decompressed_;
  ChunkDecoder decoder_;
  proto::Chunk chunk_;  // the chunk of the current batch
  proto::Chunk side_chunk_;  // chunks read for their tables or times only
  std::vector<Event> side_events_;
  std::unique_ptr<ZSTD_DCtx_s, DCtxDeleter> dctx_;

  uint64_t batch_first_event_ = 0;
  std::vector<KeyValues> batch_annotations_;

  // Interning tables of chunks [0, tables_through_).
  size_t tables_through_ = 0;
  std::vector<std::string> strings_;
  std::vector<FrameIds> frames_;
  std::vector<uint32_t> stack_frame_ids_;  // all stacks' frame ids, back to back
  std::vector<size_t> stack_starts_;  // stack id k's frames start at stack_starts_[k - 1]
};

}  // namespace memreplay
