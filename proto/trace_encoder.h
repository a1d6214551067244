// TraceEncoder: writes a .mrt file (trace.proto, framing.h) without protobuf. It is the writer
// core behind both writers, TraceWriter (recorder/import/, for importers) and LiveTraceWriter
// (recorder/live/, inside recorded processes, where protobuf cannot go), so that the two cannot
// drift: the same options are refused the same way and the same input gives the same bytes.
//
//   begin(header)    file magic + HEADER record, in one write()
//   append...        events go to the ChunkEncoder (chunk_encoder.h); every events_per_chunk
//                    events, or on flush(), a zstd-compressed CHUNK record goes to the file in one
//                    write(), so a process killed at any moment leaves its whole chunks readable
//   finish()         the last chunk, then FOOTER record + trailer in one write(), and close
//                    (a descriptor the caller gave stays open: the caller closes it)
//
// With compression_threads N > 0, a full chunk is compressed on a thread of its own while the
// caller goes on appending; up to N chunks at once, each with a zstd context of its own, and the
// records are written in chunk order by the caller's thread. zstd's output depends only on the
// input and the level, so the file is the same byte for byte; a chunk reaches the file when a
// later chunk needs its place, or on flush() and finish().
//
// Errors writing the file throw InputError naming the path; after one the encoder refuses every
// call but destruction (the file keeps every record written before). Misuse (a call before begin()
// or after finish(), an invalid event) throws std::logic_error naming the writer's call, e.g.
// "TraceWriter::append() before begin()". Not thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <future>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "proto/chunk_encoder.h"
#include "proto/event.h"
#include "proto/frame_text.h"

namespace memreplay {

// A chunk record stays under the format's size limit (format::kMaxRecordBytes) whatever its
// values with at most this many events.
inline constexpr uint32_t kMaxEventsPerChunk = 1u << 21;

// trace.proto's TraceHeader without protobuf. The encoder sets the format version, and the
// producer when empty ("memreplay <version>", proto/version.h).
struct TraceHeaderFields {
  struct Device {
    uint32_t index = 0;
    std::string name;
    uint64_t total_memory = 0;
    uint64_t cap_bytes = 0;  // the run's per-process cap (trace.proto's DeviceInfo); 0: none known
    uint64_t segments_of_unknown_pool = 0;  // a snapshot's segments of unknown pool (DeviceInfo)
    uint64_t allocations_of_unknown_pool = 0;
  };
  std::string source;
  std::string source_file;
  uint64_t capture_time_ns = 0;
  std::string command_line;
  uint64_t pid = 0;
  std::vector<Device> devices;
  std::map<std::string, std::string> allocator_settings;
  std::string producer;
  bool starts_mid_run = false;
  // trace.proto's PoolInfo: the private pools events name (Event::pool); the default pool is not listed.
  struct Pool {
    uint32_t id = 0;
    std::string kind;  // "graph", "mempool", "unknown"
    uint64_t torch_id_first = 0, torch_id_second = 0;
    std::string name;
  };
  std::vector<Pool> pools;
  bool captures_flagged = false;  // allocs under a CUDA graph capture carry kCaptured
};

struct TraceEncoderOptions {
  uint32_t events_per_chunk = 65536;  // 1 to kMaxEventsPerChunk
  int zstd_level = 9;
  uint32_t compression_threads = 0;  // 0: compress on the caller's thread; at most kMaxCompressionThreads
};

inline constexpr uint32_t kMaxCompressionThreads = 64;

class TraceEncoder {
 public:
  // Creates (truncates) file_path, writing nothing yet. Errors name path (a temporary file_path
  // stays the writer's business). writer names the writer in messages ("TraceWriter"). Throws
  // std::invalid_argument for options out of range, InputError if the file cannot be created.
  TraceEncoder(std::string_view writer, std::string path, const std::string& file_path, TraceEncoderOptions options);
  // Writes to `fd`, which the caller opened and closes (base/output_file.h): finish() and
  // abandon() leave it open. Errors name path.
  TraceEncoder(std::string_view writer, std::string path, int fd, TraceEncoderOptions options);
  // Closes the file if finish() did not (a file of its own).
  ~TraceEncoder();
  TraceEncoder(const TraceEncoder&) = delete;
  TraceEncoder& operator=(const TraceEncoder&) = delete;

  void begin(const TraceHeaderFields& header);
  uint32_t intern_stack(std::span<const FrameText> frames);
  // An annotation event may come here too, without metadata; its aux is assigned by the encoder.
  void append(const Event& event);
  void append_annotation(const Event& event, const KeyValues& metadata);
  // Writes chunks whose rows were encoded beforehand (ChunkEncoder::take_rows, every
  // events_per_chunk events, the last one with the rest), joined with the tables of `encoder`, which
  // interned every stack they name and holds no events beyond them: the records append() would
  // have written for the same stacks and events. Rows compressed ahead for the tables the file
  // ends up with (ChunkEncoder::compressed_matches) are written as they are. Only before anything
  // was interned or appended; otherwise, for rows cut elsewhere, or for rows without their
  // columns whose compressed chunk does not match, throws std::logic_error.
  void append_encoded(format::ChunkEncoder&& encoder, const std::vector<format::ChunkRows>& rows);
  // Writes the pending events and table entries as a chunk now.
  void flush();
  // The last chunk, the footer and the trailer; closes the file. Idempotent.
  void finish();
  // Closes the file without finishing it (a writer abandoning its output). Never throws.
  void abandon() noexcept;

  const std::string& path() const { return path_; }
  uint64_t events_appended() const { return chunks_.events_added(); }
  bool finished() const { return state_ == State::finished; }

 private:
  struct IndexEntry {
    uint64_t offset;
    format::ChunkSummary summary;
  };
  // failed: a write error left a partial record behind.
  enum class State { created, writing, finished, failed };

  void check_options_and_make_compressors();
  void require_writing(const char* call) const;
  [[noreturn]] void misuse(const char* call, const std::exception& e) const;
  struct Compressor;  // a zstd context with its buffers, reused chunk after chunk (trace_encoder.cpp)
  struct CompressorDeleter {
    void operator()(Compressor* compressor) const;
  };
  struct PendingChunk {
    std::future<void> done;
    Compressor* compressor;
    format::ChunkSummary summary;
  };

  void write_chunk();
  void write_encoded_chunk(std::string_view chunk, const format::ChunkSummary& summary);
  void write_chunk_record(std::string_view compressed, const format::ChunkSummary& summary);
  void write_oldest_pending();
  void write_all_pending();
  std::string encode_footer() const;
  void write_bytes(std::string_view bytes);

  std::string writer_;
  std::string path_;
  TraceEncoderOptions options_;
  int fd_ = -1;
  bool owns_fd_ = true;  // opened from file_path (else the caller's)
  uint64_t offset_ = 0;  // bytes written so far
  State state_ = State::created;
  format::ChunkEncoder chunks_;
  // One with compression on the caller's thread, else compression_threads of them, chunk k
  // taking compressors_[k % N]: chunk k - N, the last to use it, was written before k starts.
  std::vector<std::unique_ptr<Compressor, CompressorDeleter>> compressors_;
  uint64_t chunks_started_ = 0;
  // Chunks being compressed, in chunk order. Declared after compressors_, so that its futures are
  // waited for before the compressors they use go away.
  std::deque<PendingChunk> pending_;

  // What the footer sums up.
  std::vector<IndexEntry> index_;
  uint64_t min_time_ = 0, max_time_ = 0;
};

}  // namespace memreplay
