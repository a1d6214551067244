#include "recorder/import/pytorch/pool_assignment.h"

#include <iterator>

namespace memreplay {
namespace {

template <typename Map>
auto find_containing(const Map& ranges, uint64_t address) -> const typename Map::mapped_type* {
  auto it = ranges.upper_bound(address);
  if (it == ranges.begin()) return nullptr;
  --it;
  return address < it->second.end ? &it->second : nullptr;
}

}  // namespace

std::optional<uint16_t> PoolIds::id(uint64_t first, uint64_t second) {
  if (first == 0 && second == 0) return kDefaultPool;
  for (size_t i = 0; i < pools_.size(); ++i)
    if (pools_[i].first == first && pools_[i].second == second) return static_cast<uint16_t>(i + 1);
  if (pools_.size() >= kMaxPools) return std::nullopt;
  pools_.push_back({first, second});
  return static_cast<uint16_t>(pools_.size());
}

void PoolIds::name_pools(proto::TraceHeader& header) const {
  for (size_t i = 0; i < pools_.size(); ++i) {
    proto::PoolInfo* info = header.add_pools();
    info->set_id(static_cast<uint32_t>(i + 1));
    info->set_kind(pools_[i].kind());
    info->set_torch_id_first(pools_[i].first);
    info->set_torch_id_second(pools_[i].second);
  }
}

PoolAssignment::PoolAssignment(const AllocatorState& final_state) {
  for (const SegmentState& s : final_state.segments) {
    auto& ranges = s.expandable ? expandable_ : segments_;
    ranges[s.address] = {s.address + s.size, s.pool, true};
  }
}

const PoolAssignment::Range* PoolAssignment::containing(uint64_t address) const {
  if (const Range* r = find_containing(segments_, address)) return r;
  return find_containing(expandable_, address);
}

uint16_t PoolAssignment::pool_at(uint64_t address) const {
  const Range* r = containing(address);
  return r ? r->pool : kDefaultPool;
}

uint16_t PoolAssignment::undo(const TraceStep& step) {
  switch (step.kind) {
    case EventKind::segment_free:  // before it, the segment existed: its pool is not recorded anywhere
      segments_[step.address] = {step.address + step.size, kDefaultPool, false};
      ++counts_.segments_of_unknown_pool;
      return kDefaultPool;
    case EventKind::segment_alloc: {  // before it, the segment did not exist
      auto it = segments_.find(step.address);
      if (it == segments_.end()) return kDefaultPool;  // inconsistent input: the validator's to report
      const uint16_t pool = it->second.pool;
      segments_.erase(it);
      return pool;
    }
    case EventKind::segment_map:
    case EventKind::segment_unmap: {
      if (const Range* r = find_containing(expandable_, step.address)) return r->pool;
      // A range unmapped before the snapshot: its segment's pool, if a neighbouring range names it.
      uint16_t pool = kDefaultPool;
      bool known = false;
      if (auto next = expandable_.lower_bound(step.address);
          next != expandable_.end() && next->first == step.address + step.size)
        pool = next->second.pool, known = next->second.known;
      else if (next != expandable_.begin() && std::prev(next)->second.end == step.address)
        pool = std::prev(next)->second.pool, known = std::prev(next)->second.known;
      expandable_[step.address] = {step.address + step.size, pool, known};
      return pool;
    }
    case EventKind::alloc:
    case EventKind::free_requested:
    case EventKind::free_completed: {
      const Range* r = containing(step.address);
      if (r == nullptr) return kDefaultPool;
      if (!r->known && step.kind == EventKind::alloc) ++counts_.allocations_of_unknown_pool;
      return r->pool;
    }
    default: return kDefaultPool;
  }
}

std::vector<uint16_t> assign_pools(const AllocatorState& final_state, std::span<const TraceStep> trace,
                                   PoolAssignmentCounts* counts, const TraceWindowDone& done) {
  std::vector<uint16_t> pools(trace.size(), kDefaultPool);
  bool any_private = false;
  for (const SegmentState& s : final_state.segments) any_private |= s.pool != kDefaultPool;
  // Every segment of the snapshot in the default pool: so is every entry, and nothing is unknown
  // that matters (counting would only report segments freed in the default pool).
  if (!any_private) return pools;
  PoolAssignment assignment(final_state);
  TraceWindows windows(done, trace.size());
  for (size_t i = trace.size(); i-- > 0;) {
    windows.backward(i);
    pools[i] = assignment.undo(trace[i]);
  }
  if (counts) *counts = assignment.counts();
  return pools;
}

}  // namespace memreplay
