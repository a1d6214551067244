// The Policy interface: an allocator's decisions, and nothing else. A policy receives requests in
// trace order, obtains memory only through its Device, and hands out blocks. The engine (replayer/)
// measures live bytes from what allocate() returns; the Device counts driver calls and reserved
// bytes. Policies never measure themselves, except for decisions only they can see (stats()).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "policies/device.h"

namespace memreplay {

struct Block {
  uint64_t address = 0;
  uint64_t size = 0;  // bytes handed out, rounding and unsplit slack included ("allocated bytes")
};

class Policy {
 public:
  virtual ~Policy() = default;

  // Allocate `bytes` (as requested by the application, > 0) for use on `stream`.
  // nullopt is an out-of-memory result, not an error.
  virtual std::optional<Block> allocate(uint64_t bytes, StreamId stream) = 0;
  // Return a block allocate() handed out. The block is reusable at once: the engine calls this at
  // the trace's free_completed, after any cross-stream uses have finished.
  virtual void free(uint64_t address) noexcept = 0;
  // torch.cuda.empty_cache(): give cached memory back to the device.
  virtual void empty_cache() {}

  // Rebuilding an allocator that was already running when the trace starts (ring-buffer traces).
  // adopt_segment: a segment of `bytes` on `stream` existed before the first event; returns the
  // address the policy gave it, or nullopt if this policy has no segments (then the engine
  // adopts blocks with allocate()). adopt_block: carve a live block at exactly [address, +size)
  // inside an adopted segment.
  virtual std::optional<uint64_t> adopt_segment(uint64_t bytes, StreamId stream) {
    (void)bytes, (void)stream;
    return std::nullopt;
  }
  virtual std::optional<Block> adopt_block(uint64_t address, uint64_t size, uint64_t requested,
                                           StreamId stream) {
    (void)address, (void)size, (void)requested, (void)stream;
    return std::nullopt;
  }

  // Stream-ordering hints from CUDA-level traces, for policies that use them.
  virtual void on_stream_event(StreamId stream, uint64_t cuda_event, bool is_wait) {
    (void)stream, (void)cuda_event, (void)is_wait;
  }

  // Counters only the policy can know, keyed as PyTorch names them where it has a name
  // (e.g. "num_alloc_retries").
  virtual std::map<std::string, uint64_t> stats() const { return {}; }
};

}  // namespace memreplay
