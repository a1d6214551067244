// Where recorders and importers put what they capture. TraceWriter (trace_writer.h) writes a .mrt
// file; CollectingSink keeps everything in memory (tests, small tools).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "proto/chunk_encoder.h"
#include "proto/event.h"
#include "proto/frame_text.h"
#include "proto/trace.pb.h"

namespace memreplay {

class TraceSink {
 public:
  virtual ~TraceSink() = default;
  // Called once, before anything else.
  virtual void begin(const proto::TraceHeader& header) = 0;
  // Stack id (>= 1) for these frames, innermost first; equal stacks get equal ids.
  virtual uint32_t intern_stack(std::span<const FrameText> frames) = 0;
  // Events in trace order. For an annotation event, use append_annotation instead.
  virtual void append(const Event& event) = 0;
  virtual void append_annotation(const Event& event, const KeyValues& metadata) = 0;
  // Makes the output whole. A sink that is destroyed without finish() must not leave output
  // that looks complete (TraceWriter removes its temporary file).
  virtual void finish() = 0;

  // An importer's question about a burst of segment releases that its recorded data cannot tell
  // apart (recorder/import/pytorch/empty_cache_inference.h): a release-and-retry inside the
  // allocation `next_alloc` (the first alloc after the burst) or an empty_cache() call before it.
  // Every event before the burst has been appended. True: the recorded allocator could not have
  // served `next_alloc` without releasing cached memory, so the burst is its retry; false: it
  // could, so the burst is an empty_cache(); nullopt: this sink cannot tell, and the importer's
  // own rule decides. A sink that wraps another passes the question on; one that answers sees
  // every event, so it takes no encoded chunks (encoded_chunk_format() below is nullopt).
  virtual std::optional<bool> burst_is_retry(const Event& next_alloc) {
    (void)next_alloc;
    return std::nullopt;
  }

  // A sink that writes chunks (TraceWriter) may take a whole trace as chunk rows encoded ahead,
  // while an importer was still reading (chunks_ahead.h): how it cuts and compresses its chunks,
  // or nothing when it takes only the calls above.
  struct ChunkFormat {
    uint32_t events_per_chunk = 0;
    int zstd_level = 0;
  };
  virtual std::optional<ChunkFormat> encoded_chunk_format() const { return std::nullopt; }
  // In place of begin(), intern_stack() and append(): the header, then the rows (cut every
  // events_per_chunk events) of `encoder`, which interned the stacks in the order intern_stack()
  // would have. finish() follows. The output is what the calls above would have made.
  virtual void write_encoded(const proto::TraceHeader& header, format::ChunkEncoder&& encoder,
                             const std::vector<format::ChunkRows>& rows) {
    (void)header, (void)encoder, (void)rows;
    throw std::logic_error("this sink takes no encoded chunks");
  }
};

// Keeps the trace in memory, with stacks resolved back to text.
class CollectingSink final : public TraceSink {
 public:
  void begin(const proto::TraceHeader& h) override { header = h; }
  uint32_t intern_stack(std::span<const FrameText> frames) override {
    std::vector<FrameText> key(frames.begin(), frames.end());
    auto [it, inserted] = stack_ids_.try_emplace(key, static_cast<uint32_t>(stacks.size() + 1));
    if (inserted) stacks.push_back(std::move(key));
    return it->second;
  }
  void append(const Event& e) override { events.push_back(e); }
  void append_annotation(const Event& e, const KeyValues& kv) override {
    events.push_back(e);
    annotations.push_back(kv);
  }
  void finish() override { finished = true; }

  proto::TraceHeader header;
  std::vector<Event> events;
  std::vector<std::vector<FrameText>> stacks;  // stack id k is stacks[k - 1]
  std::vector<KeyValues> annotations;  // in order of annotation events
  bool finished = false;

 private:
  std::map<std::vector<FrameText>, uint32_t> stack_ids_;
};

}  // namespace memreplay
