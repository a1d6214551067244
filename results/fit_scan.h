// The smallest capacity a trace fits in, without assuming that fitting is monotonic. A caching
// allocator can fit at a capacity and fail above it (a cap changes when it frees cached segments
// and retries), so a plain bisection can answer a capacity below one that fails. The scan:
//   1. replay uncapped: the requested peak Q (nothing fits below) and reserved peak R (fits);
//   2. replay at `grid_points` capacities evenly spaced over [Q, R];
//   3. bisect, down to the resolution, below the smallest grid capacity that fits
//      -> smallest_fit_bytes, and above the largest grid capacity that fails -> fits_above_bytes.
// monotonic is true when no tested capacity that fails lies above one that fits.
#pragma once

#include <cstdint>
#include <vector>

#include "replayer/metrics.h"
#include "replayer/replay_options.h"

namespace memreplay::results {

struct CapacityProbe {
  uint64_t capacity = 0;
  bool fits = false;
};

struct FitScan {
  uint64_t smallest_fit_bytes = 0;  // the smallest capacity found to fit
  uint64_t fits_above_bytes = 0;  // every tested capacity at or above it fits
  uint64_t largest_fail_bytes = 0;  // the largest tested capacity that failed (0: none below R)
  uint64_t resolution_bytes = 0;
  bool monotonic = true;
  uint64_t replays = 0;
  std::vector<CapacityProbe> probes;  // every tested capacity, ascending
  ReplayMetrics uncapped;
};

// Throws InputError when the trace runs out of memory even uncapped.
FitScan scan_min_capacity(const ReplayOptions& options, uint64_t resolution_bytes, int grid_points = 32);

}  // namespace memreplay::results
