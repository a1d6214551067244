// The capacity search that does not assume fitting is monotonic, on the real trace where it is not
// (vit: the "fits in 1.06 GiB although 1.12 GB fails and 1.2 GB fits").
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "replayer/replay_runner.h"
#include "results/fit_scan.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

bool fits(const std::string& trace, uint64_t capacity) {
  ReplayOptions o;
  o.trace_path = trace;
  o.capacity = capacity;
  return !run_replay(o).oom_at_event;
}

TEST(FitScan, FindsBothAnswersWhereFittingIsNotMonotonic) {
  ReplayOptions o;
  o.trace_path = testing::imported_trace("vit_infer_varbatch.default");
  const auto scan = results::scan_min_capacity(o, {.resolution_bytes = 1 << 20, .grid_points = 32});
  EXPECT_FALSE(scan.monotonic);
  EXPECT_LT(scan.smallest_fit_bytes, scan.largest_fail_bytes);
  EXPECT_GT(scan.fits_above_bytes, scan.largest_fail_bytes);
  // Each answer is what a replay at that capacity does.
  EXPECT_TRUE(fits(o.trace_path, scan.smallest_fit_bytes));
  EXPECT_FALSE(fits(o.trace_path, scan.largest_fail_bytes));
  EXPECT_TRUE(fits(o.trace_path, scan.fits_above_bytes));
  // Every tested capacity from fits_above up fits.
  for (const auto& p : scan.probes)
    if (p.capacity >= scan.fits_above_bytes) EXPECT_TRUE(p.fits) << p.capacity;
}

TEST(FitScan, MonotonicTraceGivesOneAnswer) {
  ReplayOptions o;
  o.trace_path = testing::imported_trace("multistream_pipeline.default");
  o.policy_spec = "pytorch:expandable_segments:True";
  const auto scan = results::scan_min_capacity(o, {.resolution_bytes = 1 << 20, .grid_points = 16});
  EXPECT_TRUE(scan.monotonic);
  EXPECT_EQ(scan.smallest_fit_bytes, scan.fits_above_bytes);
  EXPECT_LE(scan.smallest_fit_bytes - scan.largest_fail_bytes, 1u << 20);
}

// A grid run as jobs on threads of their own (as a sweep's idle workers run them) changes nothing
// but the time: the same probes, answers and replay count as one after another.
TEST(FitScan, GridRunAsParallelJobsGivesTheSameScan) {
  ReplayOptions o;
  o.trace_path = testing::imported_trace("vit_infer_varbatch.default");
  const results::FitSearch alone{.resolution_bytes = 1 << 20, .grid_points = 16};
  results::FitSearch parallel = alone;
  size_t jobs_run = 0;
  parallel.run_grid = [&jobs_run](const std::vector<std::function<void()>>& jobs) {
    std::vector<std::thread> threads;
    for (const auto& job : jobs) threads.emplace_back(job);
    for (auto& t : threads) t.join();
    jobs_run += jobs.size();
  };
  const auto a = results::scan_min_capacity(o, alone);
  const auto b = results::scan_min_capacity(o, parallel);
  EXPECT_EQ(jobs_run, 16u);
  EXPECT_EQ(a.smallest_fit_bytes, b.smallest_fit_bytes);
  EXPECT_EQ(a.fits_above_bytes, b.fits_above_bytes);
  EXPECT_EQ(a.largest_fail_bytes, b.largest_fail_bytes);
  EXPECT_EQ(a.monotonic, b.monotonic);
  EXPECT_EQ(a.replays, b.replays);
  ASSERT_EQ(a.probes.size(), b.probes.size());
  for (size_t i = 0; i < a.probes.size(); ++i) {
    EXPECT_EQ(a.probes[i].capacity, b.probes[i].capacity);
    EXPECT_EQ(a.probes[i].fits, b.probes[i].fits) << a.probes[i].capacity;
  }
}

TEST(FitScan, AJobThatThrowsFailsTheScan) {
  ReplayOptions o;
  o.trace_path = testing::imported_trace("multistream_pipeline.default");
  results::FitSearch search;
  search.run_grid = [](const std::vector<std::function<void()>>&) { throw std::runtime_error("no worker"); };
  EXPECT_THROW(results::scan_min_capacity(o, search), std::runtime_error);
}

}  // namespace
}  // namespace memreplay
