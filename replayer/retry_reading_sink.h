// RetryReadingSink: a TraceSink in front of another, for an import that knows the per-process cap
// the recorded run had (`memreplay import --capacity`, a snapshot replayed with --capacity,
// memreplay.load(..., capacity=)). With the cap it settles the bursts of segment releases that the
// snapshot leaves open between a release-and-retry and an empty_cache() call
// (TraceSink::burst_is_retry; the rules are in recorder/import/pytorch/empty_cache_inference.h).
//
// It replays every event it passes on, once and in order, through the pytorch policy configured as
// the recorded allocator was (the header's PYTORCH_CUDA_ALLOC_CONF) on a simulated device capped at
// the cap, one session per recorded device. Asked about a burst, it has replayed the trace up to
// it, and asks the model whether the allocation after the burst fits without releasing cached
// memory (CachingAllocatorPolicy::fits_without_release). The two readings part exactly there:
//   - it does not fit: without an empty_cache the allocator releases and retries by itself, to the
//     same state as an empty_cache() and then the allocation: the burst is that retry;
//   - it fits: nothing in the allocator releases there, so the burst must be an empty_cache().
// What the importer emits (an empty_cache event or none) is what this sink replays on, so each
// verdict stands on the ones before it. One pass, no replay per burst: a question costs one search.
//
// It answers nullopt (the importer's own rule decides) where it cannot replay the run: a header
// whose PYTORCH_CUDA_ALLOC_CONF the policy does not model (e.g. backend:cudaMallocAsync), or a
// device whose replay ran out of memory under the cap (a cap below what the trace needs: the replay
// that follows reports that OOM). An allocation in a private pool is never a retry's: PyTorch
// skips the release of every cached segment while a capture or a MemPool is allocating.
//
// The header it passes on records the cap on every device (DeviceInfo.cap_bytes), so a replay of
// the trace uses it without being told.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "proto/trace_sink.h"

namespace memreplay {

class RetryReadingSink final : public TraceSink {
 public:
  // `cap`: the recorded run's per-process cap in bytes, as --capacity gives it.
  RetryReadingSink(TraceSink& inner, uint64_t cap);
  ~RetryReadingSink() override;

  void begin(const proto::TraceHeader& header) override;
  uint32_t intern_stack(std::span<const FrameText> frames) override { return inner_.intern_stack(frames); }
  void append(const Event& event) override;
  void append_annotation(const Event& event, const KeyValues& metadata) override;
  void finish() override { inner_.finish(); }
  std::optional<bool> burst_is_retry(const Event& next_alloc) override;

  // How many bursts it settled, and how many of them as retries.
  uint64_t settled() const { return settled_; }
  uint64_t retries() const { return retries_; }
  // The first trace event at which a device's replay under the cap ran out of memory, if one did:
  // the cap is below what the trace needs, and the bursts after it keep the importer's reading.
  std::optional<uint64_t> out_of_memory_at() const;

 private:
  struct DeviceReplay;
  DeviceReplay* replay_of(uint32_t device);

  TraceSink& inner_;
  uint64_t cap_;
  std::string trace_name_;  // names the trace in the replay's messages
  std::optional<std::string> alloc_conf_;  // the recorded PYTORCH_CUDA_ALLOC_CONF; none: cannot replay it
  std::vector<uint64_t> total_memory_;  // by device index, from the header (0: unknown)
  std::vector<std::unique_ptr<DeviceReplay>> devices_;  // by device index, made at its first event
  uint64_t events_ = 0;  // events passed on: the next one's index in the trace
  uint64_t settled_ = 0, retries_ = 0;
};

}  // namespace memreplay
