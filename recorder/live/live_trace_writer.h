// LiveTraceWriter: the .mrt writer of the live recorders (live_recorder.h). The same format as
// TraceWriter (proto/trace.proto, proto/framing.h) in its streaming mode: every chunk is handed
// to the OS as one write() when it is full or on flush(), so a killed process leaves a file whose
// whole chunks read back, and finish() adds the footer and trailer.
//
// Why a second writer: the live recorders go into other people's processes as self-contained
// shared libraries (the CUDA interposer, libmemreplay_record.so for PyTorch). Debian's static
// protobuf cannot be linked into a shared library (its thread-locals use the local-exec model),
// and a dynamic one would be loaded into the host process, where PyTorch, TensorFlow or ONNX bring
// their own protobuf under the same symbol names. So this writer encodes the three messages it
// writes by hand (wire_format.h) and needs only zstd and zlib. TraceReader reads its files like
// any other (tests/live_recorder_test.cpp checks that against TraceWriter's output).
//
// Errors writing the file throw InputError naming the path; after one the writer is only good for
// destruction (the file keeps every record written before). Not thread-safe: LiveRecorder's
// writer thread is its only user.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "proto/event.h"
#include "proto/frame_text.h"

struct ZSTD_CCtx_s;

namespace memreplay {

// TraceHeader's fields (trace.proto) without protobuf; the format version and producer are added
// by the writer.
struct LiveTraceHeader {
  struct Device {
    uint32_t index = 0;
    std::string name;
    uint64_t total_memory = 0;
  };
  std::string source;
  std::string command_line;
  uint64_t capture_time_ns = 0;
  uint64_t pid = 0;
  std::vector<Device> devices;
  std::map<std::string, std::string> allocator_settings;
  bool starts_mid_run = false;
};

class LiveTraceWriter {
 public:
  // Creates (truncates) `path` and writes the magic and the header; throws InputError if it cannot.
  LiveTraceWriter(std::string path, const LiveTraceHeader& header, uint32_t events_per_chunk, int zstd_level);
  ~LiveTraceWriter();
  LiveTraceWriter(const LiveTraceWriter&) = delete;
  LiveTraceWriter& operator=(const LiveTraceWriter&) = delete;

  // Stack id (>= 1) for these frames, innermost first; equal stacks get equal ids.
  uint32_t intern_stack(std::span<const FrameText> frames);
  void append(const Event& event);  // not for annotations
  void append_annotation(const Event& event, const KeyValues& metadata);
  // Writes the pending events as a chunk now.
  void flush();
  // The last chunk, the footer and the trailer; closes the file. Idempotent.
  void finish();

  const std::string& path() const { return path_; }
  uint64_t events_appended() const { return next_event_ + kinds_.size(); }

 private:
  struct CCtxDeleter {
    void operator()(ZSTD_CCtx_s* ctx) const;
  };
  struct IndexEntry {
    uint64_t offset, first_event, event_count, min_time_ns, max_time_ns;
  };

  void add_event(const Event& e, uint64_t aux);
  uint32_t intern_string(std::string_view text);
  bool chunk_pending() const;
  void write_chunk();
  void write_bytes(std::string_view bytes);
  void require_open(const char* call) const;

  std::string path_;
  uint32_t events_per_chunk_;
  int zstd_level_;
  int fd_ = -1;
  uint64_t offset_ = 0;
  bool failed_ = false;
  std::unique_ptr<ZSTD_CCtx_s, CCtxDeleter> cctx_;

  // Interning, file-wide; the entries new since the last chunk go into the next one.
  std::unordered_map<std::string, uint32_t> string_ids_;
  std::map<std::array<uint32_t, 3>, uint32_t> frame_ids_;  // (filename, line, name) -> id
  std::map<std::vector<uint32_t>, uint32_t> stack_ids_;
  std::vector<std::string> new_strings_;
  std::vector<std::array<uint32_t, 3>> new_frames_;
  std::vector<std::vector<uint32_t>> new_stacks_;
  std::vector<std::pair<std::vector<uint32_t>, std::vector<uint32_t>>> annotations_;  // keys, values

  // The chunk being filled, column by column.
  std::vector<uint32_t> kinds_, devices_, stacks_, flags_;
  std::vector<int64_t> time_deltas_, address_deltas_;
  std::vector<uint64_t> streams_, sizes_, auxes_;
  uint64_t base_time_ = 0, previous_time_ = 0, previous_address_ = 0;
  uint64_t chunk_min_time_ = 0, chunk_max_time_ = 0;
  bool chunk_has_flags_ = false, chunk_has_aux_ = false;
  uint32_t chunk_first_string_ = 0, chunk_first_frame_ = 0, chunk_first_stack_ = 1;
  std::string encoded_, compressed_;

  // What the footer sums up.
  uint64_t next_event_ = 0;
  std::vector<IndexEntry> index_;
  std::array<uint64_t, kEventKindCount> events_per_kind_{};
  uint64_t min_time_ = 0, max_time_ = 0;
};

}  // namespace memreplay
