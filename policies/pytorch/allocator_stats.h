// The statistics PyTorch's caching allocator keeps (torch.cuda.memory_stats, the "all" column),
// updated at the same points as PyTorch updates them:
//   allocation / allocated_bytes   + at hand-out (block size incl. slack), - at free
//   active / active_bytes / requested_bytes  + at hand-out, - when the block returns to the cache
//   segment                        + per cudaMalloc, - per cudaFree (expandable maps don't count)
//   reserved_bytes                 + cudaMalloc'd or mapped bytes, - freed or unmapped bytes
//   inactive_split(_bytes)         free blocks of split, non-expandable segments
//   oversize_allocations/segments  blocks / segments >= max_split_size
//   num_device_alloc / _free       cudaMalloc + map_block calls / cudaFree + unmap_block calls
//   num_alloc_retries              entries into the last-resort alloc_block(retry) attempt
//   num_ooms, num_sync_all_streams OOM results; release_cached_blocks (empty_cache) calls
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>

namespace memreplay::pytorch {

struct Stat {
  int64_t current = 0;
  int64_t peak = 0;
  int64_t allocated = 0;  // cumulative increases
  int64_t freed = 0;      // cumulative decreases

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

struct AllocatorStats {
  Stat allocation, segment, active, inactive_split;
  Stat allocated_bytes, reserved_bytes, active_bytes, inactive_split_bytes, requested_bytes;
  Stat oversize_allocations, oversize_segments;
  uint64_t num_alloc_retries = 0;
  uint64_t num_ooms = 0;
  uint64_t num_sync_all_streams = 0;
  uint64_t num_device_alloc = 0;
  uint64_t num_device_free = 0;

  // Keys as torch.cuda.memory_stats() names them ("reserved_bytes.all.peak", "num_ooms", ...).
  std::map<std::string, uint64_t> to_map() const;
};

}  // namespace memreplay::pytorch
