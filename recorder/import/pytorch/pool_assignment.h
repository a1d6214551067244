// Which memory pool each entry of a PyTorch trace belongs to.
//
// torch 2.11's trace entries carry no pool, but a snapshot's final `segments` carry
// `segment_pool_id`: the default pool (0, 0), a CUDA graph's own pool (N, 0), or a pool made by
// torch.cuda.MemPool / graph_pool_handle() (0, N). Blocks never cross pools, so an allocation is in
// the pool of the segment that holds its address at that moment. Walking the trace backward from
// the final segments finds that segment exactly as long as it is one of the final segments, whatever
// addresses freed segments had before (a freed segment's address is often reused by a segment of
// another pool, e.g. after the empty_cache that torch.cuda.graph() runs before a capture).
//
// What the snapshot cannot tell: the pool of a segment freed before the snapshot was taken (it is
// not in `segments` and no entry names its pool). Such a segment and every allocation in it get
// the default pool and are counted (PoolAssignmentCounts), so `memreplay info` can say so.
//
// Called entry by entry from the last to the first (undo()), like rebuild_initial_state, so an
// importer can run it in the backward pass it already makes; assign_pools() does the whole walk.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <vector>

#include "proto/trace.pb.h"
#include "recorder/import/pytorch/allocator_state.h"

namespace memreplay {

// PyTorch's MempoolId_t pairs (segment_pool_id) as a trace's small pool ids: (0, 0) is the default
// pool (0); every other pair gets the next id, 1 up, in the order first seen. kind() names it as
// the header's pool table does: "graph" for a capture's own pool (N, 0), "mempool" for one made by
// torch.cuda.MemPool or graph_pool_handle() (0, N).
class PoolIds {
 public:
  struct Pool {
    uint64_t first = 0, second = 0;
    const char* kind() const { return second == 0 ? "graph" : "mempool"; }
  };
  static constexpr size_t kMaxPools = 0xffff;
  // nullopt once kMaxPools private pools have ids.
  std::optional<uint16_t> id(uint64_t first, uint64_t second);
  // The private pools, pools()[i] having id i + 1.
  const std::vector<Pool>& pools() const { return pools_; }
  // Adds the header's pool table: one PoolInfo per private pool.
  void name_pools(proto::TraceHeader& header) const;

 private:
  std::vector<Pool> pools_;
};

struct PoolAssignmentCounts {
  uint64_t segments_of_unknown_pool = 0;  // cudaMalloc segments freed before the snapshot
  uint64_t allocations_of_unknown_pool = 0;  // allocs inside one of them
};

class PoolAssignment {
 public:
  // `final_state`: the segments after the last entry, each with its pool (SegmentState::pool).
  explicit PoolAssignment(const AllocatorState& final_state);

  // The pool of `step`, the entry before the one given last (the trace's last entry first).
  uint16_t undo(const TraceStep& step);
  // The pool of the segment holding `address` before the entries undone so far (the initial
  // state's pool of a block), kDefaultPool when none does.
  uint16_t pool_at(uint64_t address) const;
  const PoolAssignmentCounts& counts() const { return counts_; }

 private:
  struct Range {
    uint64_t end;
    uint16_t pool;
    bool known;  // false: a segment freed before the snapshot
  };
  const Range* containing(uint64_t address) const;

  std::map<uint64_t, Range> segments_;  // live cudaMalloc segments, by start address
  std::map<uint64_t, Range> expandable_;  // expandable segments' ranges ever mapped (kept: a pool owns its VA)
  PoolAssignmentCounts counts_;
};

// Every entry's pool, in trace order.
// `done`: see TraceWindowDone.
std::vector<uint16_t> assign_pools(const AllocatorState& final_state, std::span<const TraceStep> trace,
                                   PoolAssignmentCounts* counts = nullptr, const TraceWindowDone& done = {});

}  // namespace memreplay
