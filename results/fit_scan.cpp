#include "results/fit_scan.h"

#include <algorithm>
#include <map>

#include "replayer/replay_runner.h"

namespace memreplay::results {
namespace {

class Prober {
 public:
  Prober(const ReplayOptions& options, uint64_t recorded_peak) : options_(options), recorded_peak_(recorded_peak) {}
  bool fits(uint64_t capacity) {
    const auto known = tested_.find(capacity);
    if (known != tested_.end()) return known->second;
    const bool ok = fits_at(options_, capacity, recorded_peak_);
    ++replays_;
    tested_[capacity] = ok;
    return ok;
  }
  // Bisects (fail, fit] down to `resolution`; returns the smallest fitting capacity found.
  uint64_t bisect(uint64_t fail, uint64_t fit, uint64_t resolution) {
    while (fit - fail > resolution) {
      const uint64_t middle = fail + (fit - fail) / 2;
      (fits(middle) ? fit : fail) = middle;
    }
    return fit;
  }
  const std::map<uint64_t, bool>& tested() const { return tested_; }
  uint64_t replays() const { return replays_; }

 private:
  ReplayOptions options_;
  uint64_t recorded_peak_;  // probes capped below it start on the address model (fits_at)
  std::map<uint64_t, bool> tested_;
  uint64_t replays_ = 0;
};

}  // namespace

FitScan scan_min_capacity(const ReplayOptions& options, uint64_t resolution_bytes, int grid_points) {
  if (resolution_bytes == 0) resolution_bytes = 1;
  FitScan scan;
  scan.uncapped = run_uncapped_replay(options);
  const uint64_t top = scan.uncapped.reserved_peak;
  const uint64_t floor = scan.uncapped.requested_peak == 0 ? 0 : scan.uncapped.requested_peak - 1;

  Prober prober(options, recorded_malloc_peak(options));
  if (top > floor) {
    for (int i = 1; i < grid_points; ++i)
      prober.fits(floor + static_cast<uint64_t>(double(top - floor) * i / grid_points));
    prober.fits(top);
  }
  // Grid neighbours: the failure below the smallest fit, the fit above the largest failure.
  const auto& tested = prober.tested();
  uint64_t smallest_fit = top, fail_below_it = floor, largest_fail = 0, fit_above_it = top;
  bool any_fail = false;
  for (const auto& [capacity, ok] : tested)
    if (ok) {
      smallest_fit = capacity;
      break;
    } else {
      fail_below_it = capacity;
    }
  for (const auto& [capacity, ok] : tested)
    if (!ok) largest_fail = capacity, any_fail = true;
  if (any_fail)
    for (const auto& [capacity, ok] : tested)
      if (capacity > largest_fail && ok) {
        fit_above_it = capacity;
        break;
      }
  prober.bisect(fail_below_it, smallest_fit, resolution_bytes);
  if (any_fail) prober.bisect(largest_fail, fit_above_it, resolution_bytes);
  // From every capacity tested (the bisections may have found failures above a fit):
  scan.largest_fail_bytes = 0;
  for (const auto& [capacity, ok] : prober.tested())
    if (!ok) scan.largest_fail_bytes = capacity;
  scan.smallest_fit_bytes = top;
  scan.fits_above_bytes = top;
  for (const auto& [capacity, ok] : prober.tested())
    if (ok) {
      scan.smallest_fit_bytes = std::min(scan.smallest_fit_bytes, capacity);
      if (capacity > scan.largest_fail_bytes) scan.fits_above_bytes = std::min(scan.fits_above_bytes, capacity);
    }
  scan.monotonic = scan.largest_fail_bytes < scan.smallest_fit_bytes;
  scan.resolution_bytes = resolution_bytes;
  scan.replays = prober.replays() + 1;
  for (const auto& [capacity, ok] : prober.tested()) scan.probes.push_back({capacity, ok});
  return scan;
}

}  // namespace memreplay::results
