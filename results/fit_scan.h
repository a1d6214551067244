// The smallest capacity a trace fits in, without assuming that fitting is monotonic: the one search
// behind `fit` and `advise` (and anything else that names a smallest capacity). A caching
// allocator can fit at a capacity and fail above it (a cap changes when it frees cached segments
// and retries), so a plain bisection can answer a capacity below one that fails. The scan:
//   1. replay uncapped: the requested peak Q (nothing fits below) and reserved peak R (fits);
//   2. replay at `grid_points` capacities evenly spaced over [Q, R] (any byte count, not only
//      whole MiB: a policy must handle every cap);
//   3. bisect below the smallest grid capacity that fits -> smallest_fit_bytes, and above the
//      largest grid capacity that fails -> fits_above_bytes, each down to the resolution and
//      ending on a replayed pair: the answer fits and the answer minus the resolution fails
//      (when that one fits after all, fitting is not monotonic there and the search goes on below,
//      a few times at most).
// monotonic is true when no tested capacity that fails lies above one that fits.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "replayer/metrics.h"
#include "replayer/replay_options.h"

namespace memreplay::results {

// Runs independent jobs and returns once every one has run, rethrowing the first job's exception.
// The search's answer does not depend on how: a sweep hands a grid's replays to its idle workers.
using RunJobs = std::function<void(const std::vector<std::function<void()>>& jobs)>;

// How fine the search is; `fit` and `advise` use the same defaults, so their answers agree.
struct FitSearch {
  uint64_t resolution_bytes = uint64_t{1} << 20;
  int grid_points = 16;
  RunJobs run_grid;  // how the grid's replays run; empty: one after another on this thread
};

struct CapacityProbe {
  uint64_t capacity = 0;
  bool fits = false;
};

struct FitScan {
  uint64_t smallest_fit_bytes = 0;  // fits (replayed)
  // The failing capacity tested closest below it (replayed): smallest_fit_bytes - resolution_bytes,
  // unless fitting is not monotonic there and the search stopped going down.
  uint64_t fails_below_smallest_bytes = 0;
  uint64_t fits_above_bytes = 0;  // fits, and so does every tested capacity above it
  uint64_t fails_below_above_bytes = 0;  // the failing capacity tested just below fits_above_bytes
  uint64_t largest_fail_bytes = 0;  // the largest tested capacity that failed (0: none)
  uint64_t resolution_bytes = 0;
  bool monotonic = true;
  uint64_t replays = 0;
  std::vector<CapacityProbe> probes;  // every tested capacity, ascending
  ReplayMetrics uncapped;
};

// Throws InputError when the trace runs out of memory even uncapped.
FitScan scan_min_capacity(const ReplayOptions& options, const FitSearch& search = {});

}  // namespace memreplay::results
