// PolicyStats: what only a policy can know about its own decisions, typed. The engine reads it;
// stats_by_name() gives the torch.cuda.memory_stats()-style names of `memreplay replay --json`.
//
// What the Device or the engine measures is not here: reserved bytes, device calls (PyTorch's
// reserved_bytes.*, num_device_alloc / num_device_free) and the pool's high-water marks come from
// DeviceCounters when the names are made, so no policy can report them differently.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "policies/device.h"

namespace memreplay {

// One of PyTorch's memory statistics ("all" column): current value, peak, cumulative ups and downs.
struct Stat {
  int64_t current = 0;
  int64_t peak = 0;
  int64_t allocated = 0;  // cumulative increases
  int64_t freed = 0;  // cumulative decreases

  void increase(uint64_t amount) {
    current += static_cast<int64_t>(amount);
    allocated += static_cast<int64_t>(amount);
    peak = std::max(peak, current);
  }
  void decrease(uint64_t amount) {
    current -= static_cast<int64_t>(amount);
    freed += static_cast<int64_t>(amount);
  }
};

// The statistics PyTorch's caching allocator keeps that depend on its own block bookkeeping,
// updated where PyTorch updates them:
//   allocation / allocated_bytes   + at hand-out (block size incl. slack), - at free
//   active / active_bytes / requested_bytes  + at hand-out, - when the block returns to the cache
//   segment                        + per cudaMalloc, - per cudaFree (expandable maps don't count)
//   inactive_split(_bytes)         free blocks of split, non-expandable segments
//   oversize_allocations/segments  blocks / segments >= max_split_size
//   num_sync_all_streams           release_cached_blocks (empty_cache) calls
struct CachingAllocatorStats {
  Stat allocation, segment, active, inactive_split;
  Stat allocated_bytes, active_bytes, inactive_split_bytes, requested_bytes;
  Stat oversize_allocations, oversize_segments;
  uint64_t num_sync_all_streams = 0;
};

struct PolicyStats {
  uint64_t alloc_retries = 0;  // last-resort attempts after freeing the cache (num_alloc_retries)
  uint64_t ooms = 0;  // allocate() results of nullopt (num_ooms); counted by Policy itself
  // PyTorch's memory_stats() families, for a policy that models its caching allocator.
  std::optional<CachingAllocatorStats> caching;
  // The policy allocates from the Device's stream-ordered pool: report the pool's high-water marks.
  bool uses_device_pool = false;
};

// Names as torch.cuda.memory_stats() has them ("reserved_bytes.all.peak", "num_ooms", ...) for
// the caching families, and as cudaMemPoolAttr has them for the pool; device-measured values from
// `device`. Empty for a policy that reports neither.
std::map<std::string, uint64_t> stats_by_name(const PolicyStats& stats, const DeviceCounters& device);

}  // namespace memreplay
