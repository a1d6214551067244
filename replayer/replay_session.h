// ReplaySession, the replay engine: streams one device's events of a trace into a Policy and
// measures.
//
// Semantics (what real allocators see):
//   alloc           -> policy.allocate(size, stream), or allocate_in_pool() for an event in a
//                      private pool; size 0 is skipped (a null pointer)
//   free_completed  -> policy.free(block, the event's stream): the block is reusable from this
//                      moment. A free_requested whose completion waits on record_stream events
//                      stays live until then.
//   empty_cache     -> policy.empty_cache()
//   event_record / stream_wait_event -> policy.on_stream_event()
//   kPreexisting segment_alloc / alloc (traces that start mid-run) -> policy.adopt_segment/_block
//   segment_free / segment_unmap of a private pool -> policy.release_pool(pool): only a released
//                      pool's segments are freed (live traces know a freed segment's pool)
//   segment_*, oom, snapshot, annotation, free_requested: recorded outcomes, not replayed.
//   kFailed events (a device call that failed, from the interposer): nothing became live.
// Metrics are first taken after the rebuilt starting state is whole (the first recorded event), never
// between adopted segments and the blocks adopted into them.
// With options.check_pools, an alloc inside no live segment of its pool and a free into another
// pool are inconsistent events (pool_consistency.h).
// A PolicyContractError from the policy (a free it refuses, a plugin's bad block) is an InputError
// naming the policy and the event index, lenient or not: lenient skips the trace's inconsistent
// events only (counted in skipped_events, the first named in first_skipped), never a policy's
// fault. The event in progress is also where a plugin's crash or exit() is reported
// (policies/plugin/plugin_guard.h).
// Measurement: live allocated/requested bytes here, reserved bytes and driver calls in the Device.
// Invariant checked in tests: reserved >= allocated >= requested at every step.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include <absl/container/flat_hash_set.h>

#include "policies/detail/address_map.h"
#include "policies/plugin/plugin_guard.h"
#include "policies/policy.h"
#include "proto/event.h"
#include "replayer/latency_histogram.h"
#include "replayer/metrics.h"
#include "replayer/pool_consistency.h"
#include "replayer/replay_options.h"
#include "replayer/timeline.h"

namespace memreplay {

class ReplaySession {
 public:
  // Uses trace_path (for messages), trace_device, lenient, continue_after_oom, timeline_points
  // and time_operations of `options`; the caller made the policy and device.
  ReplaySession(Policy& policy, Device& device, ReplayOptions options);

  // One event of the trace, in order; `trace_index` is its index in the whole file.
  // Throws InputError (unless lenient) for an event inconsistent with the live state.
  // Returns false once the replay has stopped at an OOM.
  bool feed(const Event& event, uint64_t trace_index);
  // A batch of consecutive events starting at `first_trace_index`; the time spent here is the
  // engine time reported as replay_seconds (reading the trace is excluded).
  bool feed_batch(std::span<const Event> events, uint64_t first_trace_index);
  bool stopped() const { return stopped_; }
  // Metrics so far (policy and device names are the caller's to fill in).
  ReplayMetrics finish();

 private:
  struct LiveBlock {
    uint64_t policy_address;
    uint64_t size;  // bytes the policy handed out
    uint64_t requested;  // bytes the application asked for
  };

  bool feed_events(std::span<const Event> events, uint64_t first_trace_index);  // feed, untimed
  void dispatch(const Event& event, uint64_t trace_index);
  void on_alloc(const Event& event, uint64_t trace_index);
  void on_free(const Event& event, uint64_t trace_index);
  void on_segment(const Event& event, uint64_t trace_index);
  void on_preexisting_segment(const Event& event, uint64_t trace_index);
  void on_preexisting_alloc(const Event& event, uint64_t trace_index);
  // An allocation the policy could not serve: counted, the first one described; stops the replay
  // unless continue_after_oom.
  void record_oom(const Event& event, uint64_t index, uint64_t trace_index);
  void add_live(uint64_t trace_address, const Block& block, uint64_t requested);
  void count_live(const Block& block, uint64_t requested);  // live bytes and their peaks
  // After every change: the moment at the peak and the timeline (inline: it runs for every event).
  void after_change(uint64_t time_ns, uint64_t trace_index) {
    const uint64_t reserved = device_counters_.reserved_bytes;
    if (reserved > metrics_.reserved_peak || !metrics_.peak_trace_event ||
        (reserved == metrics_.reserved_peak &&
         (allocated_ > allocated_at_peak_moment_ || allocated_ < least_allocated_at_peak_))) [[unlikely]]
      at_reserved_peak(reserved, trace_index);
    timeline_.record(replay_index_, time_ns, reserved, allocated_, requested_);
  }
  // Reserved bytes above their highest so far, or held there with more (or fewer) bytes allocated
  // than before (ReplayMetrics: the moment at the peak is the first with the most allocated).
  void at_reserved_peak(uint64_t reserved, uint64_t trace_index);
  void measure_peak_moment(uint64_t reserved, uint64_t trace_index);
  void inconsistent(uint64_t trace_index, const std::string& what);
  // A policy's contract fault as one line naming the policy (options_.policy_spec).
  std::string contract_fault(const std::string& what) const;
  uint64_t device_calls() const;
  // The policy's allocate and free, timed per operation only with options_.time_operations.
  std::optional<Block> timed_allocate(uint64_t bytes, StreamId stream, PoolId pool, Capture capture) {
    if (!options_.time_operations) [[likely]]
      return policy_.allocate_in_pool(bytes, stream, pool, capture);
    return allocate_measuring_latency(bytes, stream, pool, capture);
  }
  // Whether the trace says `event` (an alloc in a private pool) was made under a graph capture.
  Capture capture_of(const Event& event) const;
  void timed_free(uint64_t address, StreamId stream) {
    if (!options_.time_operations) [[likely]]
      return policy_.free(address, stream);
    free_measuring_latency(address, stream);
  }
  std::optional<Block> allocate_measuring_latency(uint64_t bytes, StreamId stream, PoolId pool, Capture capture);
  void free_measuring_latency(uint64_t address, StreamId stream);

  Policy& policy_;
  Device& device_;
  const DeviceCounters& device_counters_;  // read after every event: no virtual call
  ReplayOptions options_;
  ReplayMetrics metrics_;
  Timeline timeline_;
  // Open addressing: the per-event lookups are the engine's hot path (the policies' map).
  detail::AddressMap<LiveBlock> live_;  // trace address -> block
  // Trace addresses of blocks this replay does not hold, whose frees are no error: their alloc OOMed,
  // or (from_empty_pool) they were live before the trace began.
  absl::flat_hash_set<uint64_t> unreplayed_blocks_;
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> adopted_segments_;  // trace addr -> (size, policy addr)
  uint64_t allocated_ = 0;
  uint64_t requested_ = 0;
  uint64_t allocated_at_peak_moment_ = 0;  // ReplayMetrics::peak_trace_event's allocated bytes
  uint64_t least_allocated_at_peak_ = 0;  // the fewest bytes allocated while the peak held
  uint64_t replay_index_ = 0;  // alloc + free_completed events seen
  uint64_t event_cursor_ = 0;  // the trace index of the event being dispatched
  bool stopped_ = false;
  PoolConsistency pools_;  // used with options_.check_pools
  LatencyHistogram allocate_cached_, allocate_device_, free_cached_, free_device_;
  std::chrono::steady_clock::duration elapsed_{};
};

}  // namespace memreplay
