#include "replayer/pool_consistency.h"

#include "replayer/hex.h"

namespace memreplay {

void PoolConsistency::on_segment(const Event& event) {
  const uint64_t lo = event.address, hi = event.address + event.size;
  if (event.kind == EventKind::segment_alloc || event.kind == EventKind::segment_map) {
    has_segments_ = true;
    segments_[lo] = {hi, event.pool};
    return;
  }
  // Remove [lo, hi), keeping what lies outside it.
  auto it = segments_.upper_bound(lo);
  if (it != segments_.begin()) --it;
  while (it != segments_.end() && it->first < hi) {
    const uint64_t start = it->first;
    const Range range = it->second;
    if (range.end <= lo) {
      ++it;
      continue;
    }
    it = segments_.erase(it);
    if (start < lo) segments_[start] = {lo, range.pool};
    if (range.end > hi) it = segments_.insert_or_assign(hi, Range{range.end, range.pool}).first;
  }
}

std::optional<std::string> PoolConsistency::on_alloc(const Event& event) {
  block_pools_[event.address] = event.pool;
  if (!has_segments_) return std::nullopt;
  const std::string what = "alloc in pool " + std::to_string(event.pool) + " at " + hex_address(event.address);
  auto it = segments_.upper_bound(event.address);
  if (it == segments_.begin()) return what + " lies in no live segment";
  --it;
  if (event.address >= it->second.end) return what + " lies in no live segment";
  if (it->second.pool != event.pool) return what + " lies in a segment of pool " + std::to_string(it->second.pool);
  return std::nullopt;
}

std::optional<std::string> PoolConsistency::on_free(const Event& event) {
  const auto it = block_pools_.find(event.address);
  if (it == block_pools_.end()) return std::nullopt;
  const uint16_t pool = it->second;
  block_pools_.erase(it);
  if (pool == event.pool) return std::nullopt;
  return "free_completed into pool " + std::to_string(event.pool) + " of a block allocated in pool " +
         std::to_string(pool);
}

}  // namespace memreplay
