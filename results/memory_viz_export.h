// A trace as a PyTorch memory snapshot (torch.cuda.memory._snapshot()'s dict, pickled), which
// PyTorch's memory_viz page and torch.cuda._memory_viz read:
//   {"segments": [...the state at the end of the trace...],
//    "device_traces": [[{"action", "addr", "size", "stream", "time_us", "frames"}, ...]],
//    "external_annotations": [{"device", "time_us", ...}],   (when the trace has such markers)
//    "allocator_settings": {...}}
// Annotations go back where PyTorch keeps them: a "user_defined" entry with its user_metadata, or
// an external annotation with its keys. Each segment's segment_pool_id is its pool's MempoolId_t
// from the header's pool table ((0, 0) for the default pool).
// The end state is rebuilt from the trace's segment and block events; each segment's blocks tile
// it exactly (active blocks rounded to 512 bytes as PyTorch rounds them, the rest "inactive"), as
// _memory_viz.segsum asserts. Events the trace starts with (kPreexisting) are state, not entries.
// A trace without segment events (an RMM log, an interposer trace) gets the segments of a replay
// under `segment_policy` (results/replayed_segments.h): its blocks then sit at the addresses that
// policy chose, and segments_replayed_under names it.
#pragma once

#include <cstdint>
#include <string>

namespace memreplay::results {

struct MemoryVizExport {
  std::string pickle;
  uint64_t entries = 0;
  uint64_t segments = 0;
  std::string segments_replayed_under;  // the policy, when the trace had no segments of its own
};

MemoryVizExport export_memory_viz(const std::string& trace_path, uint32_t trace_device,
                                  const std::string& segment_policy = "pytorch");

}  // namespace memreplay::results
