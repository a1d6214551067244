#include "results/fit_scan.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "proto/input_error.h"
#include "replayer/replay_runner.h"

namespace memreplay::results {
namespace {

constexpr int kMaxDescents = 8;

class Prober {
 public:
  Prober(const ReplayOptions& options, uint64_t resolution)
      : options_(options), resolution_(resolution), recorded_peak_(recorded_malloc_peak(options)) {}

  bool fits(uint64_t capacity) {
    const auto known = tested_.find(capacity);
    if (known != tested_.end()) return known->second;
    const bool ok = fits_at(options_, capacity, recorded_peak_);
    ++replays_;
    tested_[capacity] = ok;
    return ok;
  }

  // fits() of each capacity, the untested ones run as independent jobs of `run_jobs`.
  void fits_all(const std::set<uint64_t>& capacities, const RunJobs& run_jobs) {
    std::vector<uint64_t> untested;
    for (const uint64_t capacity : capacities)
      if (!tested_.contains(capacity)) untested.push_back(capacity);
    if (!run_jobs || untested.size() < 2) {
      for (const uint64_t capacity : untested) fits(capacity);
      return;
    }
    std::vector<char> ok(untested.size());
    std::vector<std::function<void()>> jobs;
    for (size_t i = 0; i < untested.size(); ++i)
      jobs.emplace_back([this, &ok, &untested, i] { ok[i] = fits_at(options_, untested[i], recorded_peak_); });
    run_jobs(jobs);
    for (size_t i = 0; i < untested.size(); ++i) tested_[untested[i]] = ok[i] != 0;
    replays_ += untested.size();
  }

  // Halves (fail, fit] while it is wider than the resolution; returns the final pair.
  std::pair<uint64_t, uint64_t> bisect(uint64_t fail, uint64_t fit) {
    while (fit - fail > resolution_) {
      const uint64_t middle = fail + (fit - fail) / 2;
      (fits(middle) ? fit : fail) = middle;
    }
    return {fail, fit};
  }

  // The smallest fit at or below `fit` reached by bisecting from `fail` (a failing capacity, or a
  // lower bound nothing fits at): a capacity that fits while that minus the resolution fails, both
  // replayed. When the capacity one resolution below fits although `fail` failed, fitting is not
  // monotonic there and the search goes on below it, a few times at most (a policy that fits only at
  // some alignment would otherwise walk down one resolution at a time).
  uint64_t descend(uint64_t fail, uint64_t fit) {
    for (int descents = 0;; ++descents) {
      std::tie(fail, fit) = bisect(fail, fit);
      if (fit <= resolution_) return fit;  // a zero capacity holds nothing
      const uint64_t below = fit - resolution_;
      if (below == fail && tested_.contains(below)) return fit;
      if (!fits(below)) return fit;
      if (descents == kMaxDescents) return below;
      fit = below;
      fail = largest_fail_below(fit).value_or(0);
    }
  }

  std::optional<uint64_t> largest_fail_below(uint64_t capacity) const {
    std::optional<uint64_t> out;
    for (const auto& [c, ok] : tested_) {
      if (c >= capacity) break;
      if (!ok) out = c;
    }
    return out;
  }
  std::optional<uint64_t> smallest_fit() const {
    for (const auto& [c, ok] : tested_)
      if (ok) return c;
    return std::nullopt;
  }
  std::optional<uint64_t> largest_fail() const {
    std::optional<uint64_t> out;
    for (const auto& [c, ok] : tested_)
      if (!ok) out = c;
    return out;
  }
  std::optional<uint64_t> smallest_fit_above(uint64_t capacity) const {
    for (auto it = tested_.upper_bound(capacity); it != tested_.end(); ++it)
      if (it->second) return it->first;
    return std::nullopt;
  }

  const std::map<uint64_t, bool>& tested() const { return tested_; }
  uint64_t replays() const { return replays_; }

 private:
  ReplayOptions options_;
  uint64_t resolution_;
  uint64_t recorded_peak_;  // probes capped below it start on the address model (fits_at)
  std::map<uint64_t, bool> tested_;
  uint64_t replays_ = 0;
};

}  // namespace

FitScan scan_min_capacity(const ReplayOptions& options, const FitSearch& search) {
  FitScan scan;
  scan.resolution_bytes = std::max<uint64_t>(1, search.resolution_bytes);
  scan.uncapped = run_uncapped_replay(options);
  const uint64_t top = scan.uncapped.reserved_peak;
  if (scan.uncapped.requested_peak == 0) {  // nothing to hold: any capacity fits
    scan.smallest_fit_bytes = scan.fits_above_bytes = 0;
    scan.replays = 1;
    return scan;
  }
  const uint64_t floor = scan.uncapped.requested_peak - 1;  // less than the live bytes: nothing fits

  Prober prober(options, scan.resolution_bytes);
  const int grid = std::max(1, search.grid_points);
  std::set<uint64_t> grid_capacities{top};
  for (int i = 1; i < grid; ++i) grid_capacities.insert(floor + static_cast<uint64_t>(double(top - floor) * i / grid));
  prober.fits_all(grid_capacities, search.run_grid);
  if (!prober.smallest_fit() && !prober.fits(scan.uncapped.device_memory))
    throw InputError(options.trace_path + ": with --policy " + options.policy_spec +
                     " the replay fits uncapped but at no capacity up to the device's memory");

  const uint64_t grid_fit = *prober.smallest_fit();
  scan.smallest_fit_bytes = prober.descend(prober.largest_fail_below(grid_fit).value_or(floor), grid_fit);
  // One resolution below it, as replayed; else (the search stopped going down) the nearest failure.
  const uint64_t one_below = scan.smallest_fit_bytes - std::min(scan.smallest_fit_bytes, scan.resolution_bytes);
  const auto below = prober.tested().find(one_below);
  scan.fails_below_smallest_bytes = below != prober.tested().end() && !below->second
                                        ? one_below
                                        : prober.largest_fail_below(scan.smallest_fit_bytes).value_or(0);
  scan.fits_above_bytes = scan.smallest_fit_bytes;
  scan.fails_below_above_bytes = scan.fails_below_smallest_bytes;
  if (const auto fail = prober.largest_fail(); fail && *fail > scan.smallest_fit_bytes) {
    const auto [last_fail, fit] = prober.bisect(*fail, *prober.smallest_fit_above(*fail));
    scan.fits_above_bytes = fit;
    scan.fails_below_above_bytes = last_fail;
  }
  scan.largest_fail_bytes = prober.largest_fail().value_or(0);
  scan.monotonic = scan.largest_fail_bytes < scan.smallest_fit_bytes;
  scan.replays = prober.replays() + 1;
  for (const auto& [capacity, ok] : prober.tested()) scan.probes.push_back({capacity, ok});
  return scan;
}

}  // namespace memreplay::results
