// Recorded placement (replayer/recorded_placement.h): a replay that makes the trace's own cudaMalloc
// and cudaFree calls gets the addresses the trace recorded; at its first other call it leaves them
// for good. And the real H200 snapshot that the placement model alone gets wrong.
#include "replayer/sim/recorded_placement.h"
#include "base/units.h"

#include <gtest/gtest.h>

#include "replayer/replay_runner.h"
#include "replayer/sim/sim_device.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

constexpr uint64_t kA = 0x7f8c'9800'0000ull;
constexpr uint64_t kB = 0x7f8c'ac00'0000ull;
const auto kAnywhere = [](uint64_t) { return true; };

// The trace mallocs `bytes` at `address`, then the replay makes the same call: what it gets.
std::optional<uint64_t> same_malloc(RecordedPlacement& p, uint64_t address, uint64_t bytes) {
  p.recorded_malloc(address, bytes);
  return p.replay_malloc(bytes, kAnywhere);
}

TEST(RecordedPlacement, TheTracesOwnCallsGetTheTracesAddresses) {
  RecordedPlacement p;
  EXPECT_EQ(same_malloc(p, kA, 20 * kMiB), kA);
  EXPECT_EQ(same_malloc(p, kB, 20 * kMiB), kB);
  // A capped allocator's release-and-retry: the trace's frees, then the malloc, then the replay's.
  p.recorded_free(kA);
  p.recorded_malloc(kA, 16 * kMiB);
  p.replay_free(kA);
  EXPECT_EQ(p.replay_malloc(16 * kMiB, kAnywhere), kA);
  EXPECT_TRUE(p.in_step());
  EXPECT_TRUE(p.followed());
}

// An inferred empty_cache comes before the segment_free entries it explains: the replay's frees
// run ahead of the trace's, and are matched when the trace shows them.
TEST(RecordedPlacement, FreesOfAnInferredEmptyCacheMayRunAhead) {
  RecordedPlacement p;
  ASSERT_EQ(same_malloc(p, kA, 2 * kMiB), kA);
  ASSERT_EQ(same_malloc(p, kB, 2 * kMiB), kB);
  p.replay_free(kB);
  p.replay_free(kA);
  p.recorded_free(kB);
  p.recorded_free(kA);
  EXPECT_TRUE(p.in_step());
}

TEST(RecordedPlacement, TheFirstOtherCallLeavesForGood) {
  {
    RecordedPlacement p;  // another size (another config's rounding)
    p.recorded_malloc(kA, 20 * kMiB);
    EXPECT_EQ(p.replay_malloc(22 * kMiB, kAnywhere), std::nullopt);
    EXPECT_FALSE(p.in_step());
    p.recorded_malloc(kB, 20 * kMiB);
    EXPECT_EQ(p.replay_malloc(20 * kMiB, kAnywhere), std::nullopt);
  }
  {
    RecordedPlacement p;  // a malloc the trace never made
    EXPECT_EQ(p.replay_malloc(2 * kMiB, kAnywhere), std::nullopt);
    EXPECT_FALSE(p.in_step());
  }
  {
    RecordedPlacement p;  // the trace mallocs where the replay served from its cache
    p.recorded_malloc(kA, 2 * kMiB);
    p.recorded_malloc(kB, 2 * kMiB);
    EXPECT_FALSE(p.in_step());
  }
  {
    RecordedPlacement p;  // a free of another segment than the trace's
    ASSERT_EQ(same_malloc(p, kA, 2 * kMiB), kA);
    ASSERT_EQ(same_malloc(p, kB, 2 * kMiB), kB);
    p.recorded_free(kA);
    p.replay_free(kB);
    EXPECT_FALSE(p.in_step());
    EXPECT_TRUE(p.followed());
  }
}

// A recorded address the simulator cannot take (inside its own windows, overlapping a live segment,
// 0) is not used: the model places that segment and every later one.
TEST(RecordedPlacement, SimDeviceRefusesARecordedAddressItCannotTake) {
  SimDevice sim(SimDevice::Options{});
  sim.recorded_malloc(kA, 20 * kMiB);
  EXPECT_EQ(sim.malloc(20 * kMiB), kA);
  sim.recorded_malloc(kA + 2 * kMiB, 20 * kMiB);  // overlaps the live one
  const auto second = sim.malloc(20 * kMiB);
  ASSERT_TRUE(second.has_value());
  EXPECT_NE(*second, kA + 2 * kMiB);
  EXPECT_TRUE(sim.left_recorded_placement());
  EXPECT_TRUE(sim.free(kA));
  EXPECT_TRUE(sim.free(*second));
  EXPECT_EQ(sim.counters().reserved_bytes, 0u);

  SimDevice zero(SimDevice::Options{});
  zero.recorded_malloc(0, 2 * kMiB);
  const auto placed = zero.malloc(2 * kMiB);
  ASSERT_TRUE(placed.has_value());
  EXPECT_NE(*placed, 0u);
  EXPECT_FALSE(zero.left_recorded_placement());  // it never followed the record
}

// VMM reservations are cut past segments placed at recorded addresses, never over them.
TEST(RecordedPlacement, ReservationsStepOverRecordedSegments) {
  SimDevice sim(SimDevice::Options{});
  const auto first = sim.reserve_address(2 * kMiB);
  ASSERT_TRUE(first.has_value());
  const uint64_t recorded = *first + 64 * kMiB;
  sim.recorded_malloc(recorded, 32 * kMiB);
  ASSERT_EQ(sim.malloc(32 * kMiB), recorded);
  const auto big = sim.reserve_address(128 * kMiB);
  ASSERT_TRUE(big.has_value());
  EXPECT_TRUE(*big >= recorded + 32 * kMiB || *big + 128 * kMiB <= recorded);
}

// The snapshot torch 2.11 wrote on the H200 (5 Adam steps of 8 Linear(2048, 2048),
// one empty_cache; torch's own statistics of that run in tests/data/h200_torch211_snapshot.live.json).
// Its host mappings (the history ring
// buffer growing) put segments where the placement model does not, and a tie between two free
// 4 MiB blocks at event 62 goes the other way: the model alone replays to 765,460,480 bytes and 60
// cudaMallocs. Placed where the trace recorded them, the replay equals torch's own statistics.
TEST(RecordedPlacement, TheH200SnapshotReplaysToItsLiveStats) {
  const auto run = testing::read_json(testing::source_dir() / "tests/data/h200_torch211_snapshot.live.json");
  const nlohmann::json& live = run.at("live_stats");
  const std::string trace =
      testing::imported_file(testing::source_dir() / "tests/data/h200_torch211_snapshot.pickle.xz");
  ReplayOptions request;
  request.trace_path = trace;
  const ReplayMetrics m = run_replay(request);
  EXPECT_EQ(m.reserved_peak, live.at("max_memory_reserved").get<uint64_t>());
  EXPECT_EQ(m.device_alloc_calls, live.at("num_device_alloc").get<uint64_t>());
  EXPECT_EQ(m.device_free_calls, live.at("num_device_free").get<uint64_t>());
  EXPECT_EQ(m.alloc_retries, live.at("num_alloc_retries").get<uint64_t>());
  EXPECT_TRUE(m.recorded_placement);

  request.follow_recorded_placement = false;
  const ReplayMetrics model = run_replay(request);
  EXPECT_EQ(model.reserved_peak, 765'460'480u);
  EXPECT_EQ(model.device_alloc_calls, 60u);
  EXPECT_FALSE(model.recorded_placement);
}

// A capacity search's probe capped below the trace's own cudaMalloc peak cannot make all of the
// trace's calls: it leaves them (and run_replay replays it again on the model) or runs out of
// memory while making them. fits_at gives run_replay's verdict from the model's replay alone when
// that fails. Checked at 24 caps up to each peak, which is the live run's own max_memory_reserved().
// At one byte below the H200 snapshot's peak the two replays differ: following the recorded calls
// runs out of memory at event 471 without leaving them, the model at event 243; both fail.
TEST(RecordedPlacement, AProbeCappedBelowTheRecordedPeakGetsRunReplaysVerdict) {
  const auto dir = testing::source_dir();
  const auto h200 = testing::read_json(dir / "tests/data/h200_torch211_snapshot.live.json").at("live_stats");
  const auto capped = testing::read_json(dir / "tests/data/pools/capped_retry.live.json");
  for (const auto& [snapshot, live] : {std::pair{dir / "tests/data/h200_torch211_snapshot.pickle.xz", h200},
                                       std::pair{dir / "tests/data/pools/capped_retry.pickle.xz", capped}}) {
    SCOPED_TRACE(snapshot.string());
    ReplayOptions options;
    options.trace_path = testing::imported_file(snapshot);
    const uint64_t peak = recorded_malloc_peak(options);
    EXPECT_EQ(peak, live.at("max_memory_reserved").get<uint64_t>());
    const uint64_t floor = run_uncapped_replay(options).requested_peak;
    int fits = 0, fails = 0;
    for (int i = 0; i <= 24; ++i) {
      const uint64_t cap = i == 24 ? peak - 1 : floor + (peak - floor) * i / 24;
      SCOPED_TRACE(cap);
      ReplayOptions capped_run = options;
      capped_run.capacity = cap;
      const bool fit = !run_replay(capped_run).oom_at_event;
      EXPECT_EQ(fits_at(options, cap, peak), fit);
      (fit ? fits : fails) += 1;
    }
    EXPECT_GT(fails, 0);
    // The capped job fits just below its live peak (the replay's retries free what the job's did
    // not need to): the model's fit is checked by a replay that follows the recorded calls.
    if (snapshot.filename() == "capped_retry.pickle.xz") EXPECT_GT(fits, 0);
    if (snapshot.filename() == "h200_torch211_snapshot.pickle.xz") {
      ReplayOptions at = options;
      at.capacity = peak - 1;
      const ReplayMetrics following = run_replay(at);
      at.follow_recorded_placement = false;
      const ReplayMetrics model = run_replay(at);
      EXPECT_TRUE(following.recorded_placement);
      EXPECT_EQ(following.oom_at_event, 471u);
      EXPECT_EQ(model.oom_at_event, 243u);
    }
  }
}

}  // namespace
}  // namespace memreplay
