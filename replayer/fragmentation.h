// Free-space measurement from outside the policy: free bytes are the backed ranges of the device
// minus the live blocks the policy handed out.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace memreplay {

struct FreeSpace {
  uint64_t total_free = 0;
  uint64_t largest_free = 0;  // largest contiguous free range
};

// `backed`: sorted, disjoint [start, end) ranges; `live`: (address, size) of live blocks, any order
// (sorted in place).
FreeSpace measure_free_space(const std::vector<std::pair<uint64_t, uint64_t>>& backed,
                             std::vector<std::pair<uint64_t, uint64_t>>& live);

}  // namespace memreplay
