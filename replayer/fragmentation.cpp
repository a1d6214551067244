#include "replayer/fragmentation.h"

#include <algorithm>

namespace memreplay {

FreeSpace measure_free_space(const std::vector<std::pair<uint64_t, uint64_t>>& backed,
                             std::vector<std::pair<uint64_t, uint64_t>>& live) {
  std::sort(live.begin(), live.end());
  FreeSpace result;
  size_t next_live = 0;
  for (const auto& [range_start, range_end] : backed) {
    while (next_live < live.size() && live[next_live].first < range_start) ++next_live;
    uint64_t cursor = range_start;
    for (; next_live < live.size() && live[next_live].first < range_end; ++next_live) {
      const auto [address, size] = live[next_live];
      if (address > cursor) {
        result.total_free += address - cursor;
        result.largest_free = std::max(result.largest_free, address - cursor);
      }
      cursor = std::max(cursor, address + size);
    }
    if (range_end > cursor) {
      result.total_free += range_end - cursor;
      result.largest_free = std::max(result.largest_free, range_end - cursor);
    }
  }
  return result;
}

}  // namespace memreplay
