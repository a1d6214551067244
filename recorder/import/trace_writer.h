// TraceWriter: the one producer of .mrt files (format: proto/trace.proto, proto/framing.h).
//
// Events are buffered column-wise and written as one zstd-compressed chunk record every
// events_per_chunk events, so memory stays bounded however long the trace. Strings, frames and
// stacks are interned across the whole file; each chunk carries the entries first used in it.
//
// Two ways to put the file in place:
//   atomic (default)  writes PATH.tmp.<pid> and renames it onto PATH in finish(); without finish()
//                     the temporary file is removed, so PATH is either whole or absent.
//   streaming         writes PATH directly; every chunk is handed to the OS as soon as it is full
//                     (or on flush()), so a process killed at any moment leaves a file whose whole
//                     chunks all read back (TraceReader reports it incomplete). Live recorders use it.
//
// Errors writing the file throw InputError naming the path; misuse (events before begin(), an
// invalid event kind) throws std::logic_error. Not thread-safe: one producer per writer.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "proto/event.h"
#include "proto/frame_text.h"
#include "proto/trace.pb.h"
#include "recorder/import/trace_sink.h"

struct ZSTD_CCtx_s;

namespace memreplay {

struct TraceWriterOptions {
  // 1 to kMaxEventsPerChunk. A reader holds one chunk's events at a time.
  uint32_t events_per_chunk = 65536;
  // On a real PyTorch snapshot (gpt2_generate, 453k events) levels 3 / 9 / 19 give 1.21 / 1.12 /
  // 1.00 bytes per event and write ~24M / ~10M / ~0.8M events/s: 9 is the knee, and live
  // recorders cannot afford 19. Importers that want the last 10% can ask for 19.
  int zstd_level = 9;
  bool atomic = true;
};
// Keeps a chunk record under the format's size limit (format::kMaxRecordBytes) whatever its values.
inline constexpr uint32_t kMaxEventsPerChunk = 1u << 21;

class TraceWriter final : public TraceSink {
 public:
  // Creates the output file (the temporary one when atomic); throws InputError if it cannot.
  explicit TraceWriter(std::string path, TraceWriterOptions options = {});
  // Without finish(): removes the temporary file (atomic), or leaves the chunks written so far
  // (streaming). Events not yet in a chunk are lost either way.
  ~TraceWriter() override;
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // Writes the file magic and the header record. format_major/format_minor are set to this
  // writer's version; producer defaults to "memreplay <version>".
  void begin(const proto::TraceHeader& header) override;
  uint32_t intern_stack(std::span<const FrameText> frames) override;
  // An annotation event without metadata may come here too; its aux is assigned by the writer.
  void append(const Event& event) override;
  void append_annotation(const Event& event, const KeyValues& metadata) override;
  // Writes the last chunk, the footer and the trailer, then renames onto the path (atomic).
  void finish() override;

  // Writes the pending events as a chunk now, so a reader sees them before the chunk is full.
  void flush();

  const std::string& path() const { return path_; }
  uint64_t events_appended() const { return next_event_; }

 private:
  struct CCtxDeleter {
    void operator()(ZSTD_CCtx_s* ctx) const;
  };
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

  // failed: a write error left a partial record behind; the writer is only good for destruction.
  enum class State { created, writing, finished, failed };

  void require_writing(const char* call) const;
  void add_event(const Event& event, uint64_t aux);
  uint32_t intern_string(std::string_view text);
  uint32_t intern_frame(const FrameText& frame);
  bool chunk_pending() const;
  void write_chunk();
  void write_bytes(std::string_view bytes);
  void discard_output() noexcept;

  std::string path_;
  std::string file_path_;  // where bytes go: path_, or the temporary file when atomic
  TraceWriterOptions options_;
  int fd_ = -1;
  uint64_t offset_ = 0;  // bytes written so far
  State state_ = State::created;

  // Interning tables; ids are positions in the file-wide tables.
  std::unordered_map<std::string, uint32_t, StringHash, std::equal_to<>> string_ids_;
  std::unordered_map<FrameKey, uint32_t, FrameKeyHash> frame_ids_;
  std::unordered_map<std::vector<uint32_t>, uint32_t, StackHash> stack_ids_;
  std::vector<uint32_t> stack_scratch_;  // frame ids of the stack being interned

  // The chunk being filled: columns and the table entries that are new since the last chunk.
  proto::Chunk chunk_;
  uint64_t chunk_min_time_ = 0;
  uint64_t chunk_max_time_ = 0;
  uint64_t previous_time_ = 0;
  uint64_t previous_address_ = 0;
  bool chunk_has_flags_ = false;
  bool chunk_has_aux_ = false;
  std::string serialized_;
  std::string compressed_;
  std::unique_ptr<ZSTD_CCtx_s, CCtxDeleter> cctx_;

  // What the footer sums up.
  proto::Footer footer_;
  uint64_t next_event_ = 0;
  std::array<uint64_t, kEventKindCount> events_per_kind_{};
};

}  // namespace memreplay
