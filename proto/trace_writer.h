// TraceWriter: the .mrt writer of the importers (format: proto/trace.proto, proto/framing.h), a
// TraceSink that takes the header as protobuf's TraceHeader. The encoding is TraceEncoder's
// (proto/trace_encoder.h), shared with the live recorders' LiveTraceWriter: events are buffered
// column-wise and written as one zstd-compressed chunk record every events_per_chunk events, so
// memory stays bounded however long the trace; strings, frames and stacks are interned across the
// whole file, each chunk carrying the entries first used in it.
//
// The file is written through base/output_file.h (its rules for symlinks, devices, FIFOs and
// inputs hold here too), in one of two ways:
//   atomic (default)  writes a temporary beside PATH and renames it onto PATH in finish(); without
//                     finish() the temporary file is removed, so PATH is either whole or as it
//                     was, also when SIGINT or SIGTERM interrupts the process.
//   streaming         writes PATH directly; every chunk is handed to the OS as soon as it is full
//                     (or on flush()), so a process killed at any moment leaves a file whose whole
//                     chunks all read back (TraceReader reports it incomplete).
//
// With `background_encoding`, events are encoded and compressed on a thread of the writer's own,
// in batches, while the caller goes on producing them (an import then costs the time of the
// slower of the two on a second core, not of both). Every other call (intern_stack,
// append_annotation, flush, finish) first waits for the batches handed over, so the file is the
// same byte for byte.
//
// Errors writing the file throw InputError naming the path; options out of range throw
// std::invalid_argument; misuse (events before begin(), an invalid event kind) throws
// std::logic_error (encoded in the background, from the append() or the call after the batch
// it was in). Not thread-safe: one producer per writer.
//
// With `encoded_chunks` (the default), an importer may instead hand over the whole trace as chunk
// rows it encoded while reading (write_encoded(), TraceEncoder::append_encoded): the same bytes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/output_file.h"
#include "proto/event.h"
#include "proto/frame_text.h"
#include "proto/trace.pb.h"
#include "proto/trace_encoder.h"
#include "proto/trace_sink.h"

namespace memreplay {

struct TraceWriterOptions {
  // 1 to kMaxEventsPerChunk (proto/trace_encoder.h). A reader holds one chunk's events at a time.
  uint32_t events_per_chunk = 65536;
  // On a real PyTorch snapshot (gpt2_generate, 453k events) levels 3 / 9 / 19 give 1.21 / 1.12 /
  // 1.00 bytes per event and write ~24M / ~10M / ~0.8M events/s. At 9 compression was a quarter
  // of a whole import; 3 (zstd's own default, as the live recorder) costs 8% more bytes and keeps
  // import 4x faster than Python's pickle.load. Writers that want the last 10-20% can ask for 19.
  int zstd_level = 3;
  bool atomic = true;
  bool background_encoding = false;
  // Chunks compressed on up to this many threads at once (TraceEncoderOptions), the same bytes.
  uint32_t compression_threads = 0;
  // Whether an importer may hand over chunk rows it encoded while reading (write_encoded()); the
  // bytes are the same either way.
  bool encoded_chunks = true;
};

// Every field of a TraceHeader but the format version (which the encoder sets), as the encoder
// takes them. tests/writer_contract_test.cpp fails when TraceHeader gains a field this misses.
TraceHeaderFields header_fields(const proto::TraceHeader& header);

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
  // writer's version; producer defaults to "memreplay <version>" (proto/version.h).
  void begin(const proto::TraceHeader& header) override;
  uint32_t intern_stack(std::span<const FrameText> frames) override {
    drain();
    const uint32_t id = encoder_.intern_stack(frames);
    stacks_interned_ = std::max(stacks_interned_, id);
    return id;
  }
  // An annotation event without metadata may come here too; its aux is assigned by the writer.
  void append(const Event& event) override {
    if (background_ == nullptr || !batchable(event)) return append_now(event);
    batch_.push_back(event);
    if (batch_.size() == kBatchEvents) hand_over_batch();
  }
  void append_annotation(const Event& event, const KeyValues& metadata) override {
    drain();
    encoder_.append_annotation(event, metadata);
  }
  // Writes the last chunk, the footer and the trailer, then renames onto the path (atomic).
  void finish() override;

  std::optional<ChunkFormat> encoded_chunk_format() const override {
    if (!encoded_chunks_) return std::nullopt;
    return ChunkFormat{events_per_chunk_, zstd_level_};
  }
  void write_encoded(const proto::TraceHeader& header, format::ChunkEncoder&& encoder,
                     const std::vector<format::ChunkRows>& rows) override;
  // Whether the events came through write_encoded().
  bool wrote_encoded() const { return wrote_encoded_; }

  // Writes the pending events as a chunk now, so a reader sees them before the chunk is full.
  void flush() {
    drain();
    encoder_.flush();
  }

  const std::string& path() const { return path_; }
  // Every event appended so far, in a batch not yet encoded too.
  uint64_t events_appended() const {
    return background_ != nullptr ? handed_over_ + batch_.size() : encoder_.events_appended();
  }

 private:
  class BackgroundEncoder;
  static constexpr size_t kBatchEvents = 8192;

  // An event the encoder takes without a word: any other (an annotation, a misuse the encoder
  // refuses) goes through append_now(), so that its error comes from this call.
  bool batchable(const Event& event) const {
    return event.kind != EventKind::annotation && is_valid_event_kind(static_cast<uint32_t>(event.kind)) &&
           event.stack <= stacks_interned_;
  }
  void append_now(const Event& event);
  void hand_over_batch();
  // Waits until every batch handed over is encoded; throws what encoding one threw.
  void drain();

  std::string path_;
  OutputFile file_;  // declared before the encoder, which writes to its descriptor
  bool in_place_ = false;  // finished, and renamed onto path_ when atomic
  TraceEncoder encoder_;
  bool background_encoding_;
  uint32_t events_per_chunk_;
  int zstd_level_;
  bool encoded_chunks_;
  bool wrote_encoded_ = false;
  std::vector<Event> batch_;  // background: events not handed over yet
  uint64_t handed_over_ = 0;  // background: events handed over, before the batch
  uint32_t stacks_interned_ = 0;
  std::unique_ptr<BackgroundEncoder> background_;  // from begin(), with background_encoding
};

}  // namespace memreplay
