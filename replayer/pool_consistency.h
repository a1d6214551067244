// PoolConsistency: whether a trace's pool assignment holds together, event by event. In a trace
// that names private pools (CUDA graphs, torch.cuda.MemPool), every block lives in a segment of its
// own pool and goes back to that pool: an alloc inside no live segment of its pool, or a free that
// names another pool than its alloc did, is inconsistent input. Used by `memreplay validate`
// (TraceValidator) and by the replay (ReplaySession, for traces with pools).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <absl/container/flat_hash_map.h>

#include "proto/event.h"
#include "proto/trace.pb.h"

namespace memreplay {

// Whether a trace may hold private pools, so that its pool assignment is checked: its header names
// pools (an imported snapshot), or it is a memreplay.torch recording, whose header is written
// before any pool exists and which announces each pool with an annotation instead.
inline bool may_have_private_pools(const proto::TraceHeader& header) {
  return header.pools_size() > 0 || header.source() == "pytorch-live";
}

class PoolConsistency {
 public:
  // segment_alloc / segment_map add a range of the event's pool; segment_free / segment_unmap
  // remove one (or the part of one an unmap names).
  void on_segment(const Event& event);
  // The problem with this alloc, or nullopt; the block's pool is remembered either way. Allocs are
  // checked once the trace has shown a segment (traces without segments have nothing to check).
  std::optional<std::string> on_alloc(const Event& event);
  // The problem with this free_completed, or nullopt. An address with no recorded alloc is the
  // caller's to report.
  std::optional<std::string> on_free(const Event& event);

 private:
  struct Range {
    uint64_t end;
    uint16_t pool;
  };
  std::map<uint64_t, Range> segments_;  // live segments and mapped ranges, by start address
  bool has_segments_ = false;
  absl::flat_hash_map<uint64_t, uint16_t> block_pools_;  // live block address -> its pool
};

}  // namespace memreplay
