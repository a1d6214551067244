// The segments of a trace that has none (an RMM log, an interposer trace of cudaMalloc'd blocks):
// the trace replayed under a policy, its events rewritten as that policy would have recorded them.
// Each alloc gets the address the policy chose and, in aux, the size of the block it handed out;
// free_requested / free_completed follow their block; and every change of the device's backed
// ranges (a cudaMalloc, cudaFree, map or unmap the policy made) becomes a segment_alloc or
// segment_free, before the alloc that needed it or after the free that released it.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "proto/event.h"
#include "replayer/replay_options.h"
#include "replayer/replay_runner.h"
#include "replayer/replay_session.h"
#include "results/observing_policy.h"

namespace memreplay {
class TraceReader;
}

namespace memreplay::results {

class SegmentReplay {
 public:
  // Replays under options.policy_spec on options.device_spec, the device sized from `reader`'s header.
  SegmentReplay(const TraceReader& reader, const ReplayOptions& options);

  // Feeds event `index` of the trace; appends what the policy's allocator would have recorded.
  // False once the replay ran out of memory (nothing more is appended then).
  bool feed(const Event& e, uint64_t index, std::vector<Event>& out);

 private:
  void record_segment_changes(const Event& cause, std::vector<Event>& out);

  ReplayTarget target_;
  ObservingPolicy observer_;
  ReplaySession session_;
  uint32_t trace_device_;
  uint64_t reserved_changes_ = 0;  // reserved_bytes_allocated + reserved_bytes_freed last seen
  std::vector<std::pair<uint64_t, uint64_t>> ranges_;  // backed [start, end) last seen
  std::unordered_map<uint64_t, uint64_t> address_of_;  // trace address -> policy address
};

}  // namespace memreplay::results
