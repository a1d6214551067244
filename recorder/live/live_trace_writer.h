// LiveTraceWriter: the .mrt writer of the live recorders (live_recorder.h). It writes through the
// same TraceEncoder as TraceWriter (proto/trace_encoder.h), so the same format, the same bytes
// and the same option checks, in TraceWriter's streaming mode: every chunk is handed to the OS as
// one write() when it is full or on flush(), so a killed process leaves a file whose whole chunks
// read back, and finish() adds the footer and trailer.
//
// Why not TraceWriter itself: the live recorders go into other people's processes as
// self-contained shared libraries (the CUDA interposer, libmemreplay_record.so for PyTorch).
// Debian's static protobuf cannot be linked into a shared library (its thread-locals use the
// local-exec model), and a dynamic one would be loaded into the host process, where PyTorch,
// TensorFlow or ONNX bring their own protobuf under the same symbol names. TraceWriter's header
// is a protobuf message; this writer's is TraceHeaderFields, and it needs only zstd and zlib.
//
// Errors writing the file throw InputError naming the path; after one the writer is only good for
// destruction (the file keeps every record written before). Not thread-safe: LiveRecorder's
// writer thread is its only user.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "proto/event.h"
#include "proto/frame_text.h"
#include "proto/trace_encoder.h"

namespace memreplay {

using LiveTraceHeader = TraceHeaderFields;

class LiveTraceWriter {
 public:
  // Creates (truncates) `path` and writes the magic and the header; throws InputError if it
  // cannot, std::invalid_argument for options out of range (the same as TraceWriter's).
  LiveTraceWriter(std::string path, const LiveTraceHeader& header, uint32_t events_per_chunk, int zstd_level);
  LiveTraceWriter(const LiveTraceWriter&) = delete;
  LiveTraceWriter& operator=(const LiveTraceWriter&) = delete;

  // Stack id (>= 1) for these frames, innermost first; equal stacks get equal ids.
  uint32_t intern_stack(std::span<const FrameText> frames) { return encoder_.intern_stack(frames); }
  // An annotation event without metadata may come here too.
  void append(const Event& event) { encoder_.append(event); }
  void append_annotation(const Event& event, const KeyValues& metadata) { encoder_.append_annotation(event, metadata); }
  // Writes the pending events as a chunk now.
  void flush() { encoder_.flush(); }
  // The last chunk, the footer and the trailer; closes the file. Idempotent.
  void finish() { encoder_.finish(); }

  const std::string& path() const { return encoder_.path(); }
  uint64_t events_appended() const { return encoder_.events_appended(); }

 private:
  TraceEncoder encoder_;
};

}  // namespace memreplay
