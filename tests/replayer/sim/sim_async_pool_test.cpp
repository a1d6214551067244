// The simulator's model of the driver's stream-ordered pool (SimAsyncPool, through SimDevice) and
// the cuda_async policy on it. CPU only: these run everywhere.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include "base/units.h"
#include "policies/registry.h"
#include "replayer/replay_runner.h"
#include "replayer/sim/sim_device.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

constexpr uint64_t kChunk = SimAsyncPool::kChunkBytes;

SimDevice pool_device(PoolConfig config = {}, std::optional<uint64_t> capacity = {}) {
  SimDevice device(SimDevice::Options{.capacity = capacity});
  EXPECT_TRUE(device.configure_pool(config));
  return device;
}

PoolConfig no_cross_stream_reuse() {
  PoolConfig config;
  config.reuse_allow_opportunistic = false;
  config.reuse_allow_internal_dependencies = false;
  return config;
}

TEST(SimAsyncPool, GrowsInWholeChunksAndCountsRequestedBytesAsUsed) {
  // GIVEN a fresh pool WHEN 1000 bytes are asked for
  SimDevice device = pool_device();
  const auto a = device.pool_malloc_async(1000, 0);
  ASSERT_TRUE(a);
  // THEN one 32 MiB chunk is reserved, 1000 bytes are used, no cudaMalloc happened
  const DeviceCounters& c = device.counters();
  EXPECT_EQ(c.pool_reserved_bytes, kChunk);
  EXPECT_EQ(c.reserved_bytes, kChunk);
  EXPECT_EQ(c.pool_used_bytes, 1000u);
  EXPECT_EQ(c.pool_malloc_calls, 1u);
  EXPECT_EQ(c.pool_grow_calls, 1u);
  EXPECT_EQ(c.malloc_calls, 0u);
  // AND the next allocation comes from the same chunk, 512-byte aligned
  const auto b = device.pool_malloc_async(1000, 0);
  ASSERT_TRUE(b);
  EXPECT_EQ(*b, *a + 1024);
  EXPECT_EQ(c.pool_reserved_bytes, kChunk);
  EXPECT_EQ(c.pool_used_peak, 2000u);
}

TEST(SimAsyncPool, LargeRequestExtendsTheFreeRangeAtTheTop) {
  // GIVEN 40 MiB live: two chunks, 24 MiB free at the top
  SimDevice device = pool_device();
  const auto a = device.pool_malloc_async(40 * kMiB, 0);
  ASSERT_TRUE(a);
  EXPECT_EQ(device.counters().pool_reserved_bytes, 2 * kChunk);
  // WHEN 30 MiB more are asked for THEN only the 6 MiB shortfall is grown, as one more chunk,
  // and the allocation spans the chunk boundary
  const auto b = device.pool_malloc_async(30 * kMiB, 0);
  ASSERT_TRUE(b);
  EXPECT_EQ(*b, *a + 40 * kMiB);
  EXPECT_EQ(device.counters().pool_reserved_bytes, 3 * kChunk);
  EXPECT_EQ(device.counters().pool_grow_calls, 2u);
}

TEST(SimAsyncPool, HugeRequestsComeFromARangeOfTheirOwn) {
  // GIVEN 20 MiB live WHEN a huge block (128 MiB) is asked for
  SimDevice device = pool_device();
  const auto small = device.pool_malloc_async(20 * kMiB, 0);
  const auto huge = device.pool_malloc_async(SimAsyncPool::kSeparateRequestBytes, 0);
  ASSERT_TRUE(small && huge);
  // THEN the huge block did not use the small one's chunk: 1 + 4 chunks
  EXPECT_EQ(device.counters().pool_reserved_bytes, 5 * kChunk);
  EXPECT_EQ(*huge, *small + SimAsyncPool::kSeparateRangeOffset);
  device.pool_free_async(*huge);
  // WHEN 100 MiB (under the size class) are asked for THEN the freed huge range is not used
  const auto mid = device.pool_malloc_async(100 * kMiB, 0);
  ASSERT_TRUE(mid);
  EXPECT_LT(*mid, *small + SimAsyncPool::kSeparateRangeOffset);
  EXPECT_EQ(device.counters().pool_reserved_bytes, 8 * kChunk);  // 12 MiB of chunk 0 + 3 more
  // AND a huge request takes it back; trim(0) releases every wholly free chunk of both ranges
  EXPECT_EQ(device.pool_malloc_async(130 * kMiB, 0), huge);
  device.pool_trim(0);
  EXPECT_EQ(device.counters().pool_reserved_bytes, 9 * kChunk);  // the huge range grew by one; all in use
  EXPECT_EQ(device.backed_ranges().size(), 2u);
}

TEST(SimAsyncPool, BestFitTakesTheSmallestFreeRange) {
  SimDevice device = pool_device();
  const auto a = device.pool_malloc_async(4 * kMiB, 0);
  const auto gap1 = device.pool_malloc_async(1 * kMiB, 0);
  const auto b = device.pool_malloc_async(2 * kMiB, 0);
  const auto gap2 = device.pool_malloc_async(1 * kMiB, 0);
  ASSERT_TRUE(a && gap1 && b && gap2);
  device.pool_free_async(*a);
  device.pool_free_async(*b);
  // The 2 MiB hole fits 1.5 MiB better than the 4 MiB one.
  EXPECT_EQ(device.pool_malloc_async(3 * kMiB / 2, 0), b);
  EXPECT_EQ(device.pool_malloc_async(4 * kMiB, 0), a);
}

TEST(SimAsyncPool, SameStreamReusesAtOnce) {
  SimDevice device = pool_device(no_cross_stream_reuse());
  const auto a = device.pool_malloc_async(kChunk, 7);
  device.pool_free_async(*a);
  EXPECT_EQ(device.pool_malloc_async(kChunk, 7), a);
  EXPECT_EQ(device.counters().pool_reserved_bytes, kChunk);
}

TEST(SimAsyncPool, OtherStreamWaitsForADependencyWithoutOpportunisticReuse) {
  // GIVEN a whole chunk freed on stream 7, and no opportunistic or internal-dependency reuse
  SimDevice device = pool_device(no_cross_stream_reuse());
  const auto a = device.pool_malloc_async(kChunk, 7);
  device.pool_free_async(*a);
  // WHEN stream 9 asks for a chunk THEN it gets new memory
  const auto b = device.pool_malloc_async(kChunk, 9);
  EXPECT_NE(b, a);
  EXPECT_EQ(device.counters().pool_reserved_bytes, 2 * kChunk);
  device.pool_free_async(*b);
  // WHEN stream 9 waits on an event recorded on 7 after the free THEN it reuses 7's memory
  device.stream_event(7, 0xe1, false);
  device.stream_event(9, 0xe1, true);
  EXPECT_EQ(device.pool_malloc_async(kChunk, 9), a);
  EXPECT_EQ(device.counters().pool_reserved_bytes, 2 * kChunk);
}

TEST(SimAsyncPool, SynchronizeMakesEveryFreeReusable) {
  SimDevice device = pool_device(no_cross_stream_reuse());
  const auto a = device.pool_malloc_async(kChunk, 7);
  device.pool_free_async(*a);
  device.synchronize();
  EXPECT_EQ(device.pool_malloc_async(kChunk, 9), a);
}

TEST(SimAsyncPool, FreeOfAnAddressNotLiveIsRefusedAndChangesNothing) {
  SimDevice device = pool_device();
  const auto a = device.pool_malloc_async(1000, 0);
  ASSERT_TRUE(a);
  EXPECT_FALSE(device.pool_free_async(*a + 512));  // inside a live block
  EXPECT_TRUE(device.pool_free_async(*a));
  EXPECT_FALSE(device.pool_free_async(*a));  // twice
  EXPECT_EQ(device.counters().pool_free_calls, 1u);
  EXPECT_EQ(device.counters().pool_used_bytes, 0u);
}

TEST(SimAsyncPool, OpportunisticReuseCrossesStreams) {
  SimDevice device = pool_device();  // the driver's defaults
  const auto a = device.pool_malloc_async(kChunk, 7);
  device.pool_free_async(*a);
  EXPECT_EQ(device.pool_malloc_async(kChunk, 9), a);
}

TEST(SimAsyncPool, TrimReleasesWhollyFreeChunksOnly) {
  // GIVEN three chunks, the first holding a live allocation
  SimDevice device = pool_device();
  const auto keep = device.pool_malloc_async(kMiB, 0);
  const auto big = device.pool_malloc_async(2 * kChunk, 0);
  ASSERT_TRUE(keep && big);
  EXPECT_EQ(device.counters().pool_reserved_bytes, 3 * kChunk);
  device.pool_free_async(*big);
  // WHEN trimmed to 0 THEN the two free chunks go back, the live one stays
  device.pool_trim(0);
  EXPECT_EQ(device.counters().pool_reserved_bytes, kChunk);
  EXPECT_EQ(device.counters().reserved_bytes, kChunk);
  EXPECT_EQ(device.counters().reserved_peak, 3 * kChunk);
  EXPECT_EQ(device.counters().pool_trim_calls, 1u);
  device.pool_free_async(*keep);
  device.pool_trim(0);
  EXPECT_EQ(device.counters().pool_reserved_bytes, 0u);
  EXPECT_EQ(device.counters().pool_used_bytes, 0u);
  // AND the pool grows again afterwards
  EXPECT_TRUE(device.pool_malloc_async(kMiB, 0));
  EXPECT_EQ(device.counters().pool_reserved_bytes, kChunk);
}

TEST(SimAsyncPool, ReleaseThresholdAppliesAtSynchronize) {
  PoolConfig config;
  config.release_threshold = kChunk;
  SimDevice device = pool_device(config);
  const auto a = device.pool_malloc_async(3 * kChunk, 0);
  device.pool_free_async(*a);
  EXPECT_EQ(device.counters().pool_reserved_bytes, 3 * kChunk);  // frees alone release nothing
  device.synchronize();
  EXPECT_EQ(device.counters().pool_reserved_bytes, kChunk);
}

TEST(SimAsyncPool, CapacityLimitsGrowthNotUse) {
  // GIVEN a 64 MiB cap and 50 MiB live (two chunks)
  SimDevice device = pool_device({}, 64 * kMiB);
  ASSERT_TRUE(device.pool_malloc_async(50 * kMiB, 0));
  // THEN 10 MiB still fit in the second chunk, but 20 MiB would need a third: OOM
  EXPECT_TRUE(device.pool_malloc_async(10 * kMiB, 0));
  EXPECT_FALSE(device.pool_malloc_async(20 * kMiB, 0));
  EXPECT_EQ(device.counters().failed_calls, 1u);
  EXPECT_EQ(device.counters().pool_reserved_bytes, 2 * kChunk);
}

TEST(SimAsyncPool, BackedRangesIncludeThePoolChunks) {
  SimDevice device = pool_device();
  const auto a = device.pool_malloc_async(40 * kMiB, 0);
  const auto ranges = device.backed_ranges();
  ASSERT_EQ(ranges.size(), 1u);
  EXPECT_EQ(ranges[0], std::make_pair(*a, *a + 2 * kChunk));
}

TEST(CudaAsyncPolicy, AllocatesFromThePoolAndTrimsOnEmptyCache) {
  SimDevice device(SimDevice::Options{});
  auto policy = PolicyRegistry::instance().create("cuda_async", device);
  const auto a = policy->allocate(1000, 0);
  const auto b = policy->allocate(5 * kMiB, 0x55);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->size, 1000u);  // no rounding: allocated = requested
  EXPECT_EQ(device.counters().pool_used_bytes, 1000 + 5 * kMiB);
  policy->free(a->address, 0);
  policy->free(b->address, 0x55);
  EXPECT_THROW(policy->free(b->address, 0x55), PolicyContractError);  // unknown now: refused, as by every policy
  EXPECT_EQ(device.counters().pool_free_calls, 2u);
  policy->empty_cache();
  EXPECT_EQ(device.counters().reserved_bytes, 0u);
  const auto stats = stats_by_name(policy->stats(), device.counters());
  EXPECT_EQ(stats.at("pool_reserved_mem_high"), kChunk);
  EXPECT_EQ(stats.at("pool_used_mem_high"), 1000 + 5 * kMiB);
}

TEST(CudaAsyncPolicy, FreesOnTheAllocationStreamWhicheverStreamFrees) {
  // GIVEN no cross-stream reuse WHEN a block allocated on stream 7 is freed by stream 9
  SimDevice device(SimDevice::Options{});
  auto policy = PolicyRegistry::instance().create(
      "cuda_async:reuse_allow_opportunistic:false,reuse_allow_internal_dependencies:false", device);
  const auto a = policy->allocate(kChunk, 7);
  ASSERT_TRUE(a);
  policy->free(a->address, 9);
  // THEN stream 9 gets new memory and stream 7 reuses the block: it was freed on stream 7
  const auto b = policy->allocate(kChunk, 9);
  ASSERT_TRUE(b);
  EXPECT_NE(b->address, a->address);
  EXPECT_EQ(policy->allocate(kChunk, 7)->address, a->address);
  EXPECT_EQ(device.counters().pool_reserved_bytes, 2 * kChunk);
}

TEST(CudaAsyncPolicy, OptionsParseAndUnknownOnesAreNamed) {
  SimDevice device(SimDevice::Options{});
  EXPECT_NO_THROW(PolicyRegistry::instance().create(
      "cuda_async:release_threshold:0,reuse_follow_event_dependencies:False,reuse_allow_opportunistic:True,"
      "reuse_allow_internal_dependencies:false",
      device));
  try {
    PolicyRegistry::instance().create("cuda_async:release_threshold:0,max_split_size_mb:64", device);
    FAIL() << "an unknown option must be refused";
  } catch (const PolicySpecError& e) {
    EXPECT_NE(std::string(e.what()).find("'max_split_size_mb'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(PolicyRegistry::instance().create("cuda_async:release_threshold:lots", device), PolicySpecError);
  EXPECT_THROW(PolicyRegistry::instance().create("cuda_async:reuse_allow_opportunistic:1", device), PolicySpecError);
  EXPECT_THROW(PolicyRegistry::instance().create("cuda_async:release_threshold", device), PolicySpecError);
}

TEST(CudaAsyncPolicy, ReleaseThresholdOptionReachesThePool) {
  SimDevice device(SimDevice::Options{});
  auto policy = PolicyRegistry::instance().create("cuda_async:release_threshold:0", device);
  const auto a = policy->allocate(kChunk, 0);
  policy->free(a->address, 0);
  device.synchronize();
  EXPECT_EQ(device.counters().pool_reserved_bytes, 0u);
}

// The model on the real traces: pinned to its current results (a change to the model must update
// them and sim_async_pool.cpp's calibration table together) and within 12% of the live runs.
TEST(SimAsyncPoolCalibration, RealTracesAgainstLiveAsyncpoolRuns) {
  testing::real_data_path("groundtruth/runs");  // without the ground truth: fails, naming the folder
  const std::vector<std::pair<std::string, uint64_t>> expected = {
      {"gpt2_generate", 34 * kChunk},  {"gpt2_train", 255 * kChunk},        {"multistream_pipeline", 15 * kChunk},
      {"resnet50_train", 98 * kChunk}, {"vit_infer_varbatch", 37 * kChunk},
  };
  for (const auto& [workload, model_peak] : expected) {
    const auto live =
        testing::read_json(testing::real_data_dir() / "groundtruth" / "runs" / (workload + ".asyncpool.json"));
    ReplayOptions request;
    request.trace_path = testing::imported_trace(workload + ".default");
    request.policy_spec = "cuda_async";
    const ReplayMetrics m = run_replay(request);
    const auto live_reserved = live["max_memory_reserved"].get<uint64_t>();
    EXPECT_EQ(m.reserved_peak, model_peak) << workload;
    EXPECT_NEAR(double(m.reserved_peak), double(live_reserved), 0.12 * double(live_reserved)) << workload;
    // UsedMemHigh of the live run is the requested peak, to the byte.
    EXPECT_EQ(m.allocated_peak, live["max_memory_allocated"].get<uint64_t>()) << workload;
    EXPECT_EQ(m.reserved_peak % kChunk, 0u) << workload;
  }
}

// The target: on every shared trace with a live backend:cudaMallocAsync run, the model's
// reserved peak within 3% of the live run's, or one 32 MiB chunk, whichever is larger.
TEST(SimAsyncPoolCalibration, EverySharedTraceWithinThreePercentOrOneChunkOfItsLiveRun) {
  const auto runs = testing::real_data_names("groundtruth/runs", ".asyncpool.json");
  ASSERT_EQ(runs.size(), 5u) << "*.asyncpool.json in " << testing::real_data_path("groundtruth/runs");
  for (const std::string& workload : runs) {
    const auto live =
        testing::read_json(testing::real_data_dir() / "groundtruth" / "runs" / (workload + ".asyncpool.json"));
    ReplayOptions request;
    request.trace_path = testing::imported_trace(workload + ".default");
    request.policy_spec = "cuda_async";
    const double live_reserved = live["max_memory_reserved"].get<double>();
    const double tolerance = std::max(0.03 * live_reserved, double(kChunk));
    EXPECT_NEAR(double(run_replay(request).reserved_peak), live_reserved, tolerance) << workload;
  }
}

// The pool jobs (tests/data/pools/, captured on an H100 with torch 2.11), each also run under
// backend:cudaMallocAsync (JOB.asyncpool.json): their memreplay.torch traces (which know every
// allocation's pool) replayed with cuda_async. UsedMemHigh is the requested peak of what did not go
// to a graph's capture, to the byte: a capture's allocations come from graph memory, not the pool.
// ReservedMemHigh within 3% or one chunk of the live run, except where kAsyncModelGaps lists the
// model's measured error (none since huge requests have a range of their own): that list is a
// ceiling that must stay true.
const std::map<std::string, double> kAsyncModelGaps = {};

TEST(SimAsyncPoolCalibration, PoolJobsAgainstTheirLiveAsyncpoolRuns) {
  const std::filesystem::path pools = testing::source_dir() / "tests/data/pools";
  size_t runs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(pools)) {
    const std::string name = entry.path().filename().string();
    if (!name.ends_with(".asyncpool.json")) continue;
    const std::string job = name.substr(0, name.size() - std::string(".asyncpool.json").size());
    SCOPED_TRACE(job);
    const auto live = testing::read_json(entry.path());
    ReplayOptions request;
    request.trace_path = (pools / "live" / (job + ".live.mrt")).string();
    request.policy_spec = "cuda_async";
    const ReplayMetrics m = run_replay(request);
    EXPECT_EQ(m.policy_stats.at("pool_used_mem_high"), live["max_memory_allocated"].get<uint64_t>());
    const double live_reserved = live["max_memory_reserved"].get<double>();
    const double model = static_cast<double>(m.policy_stats.at("pool_reserved_mem_high"));
    const double error = (model - live_reserved) / live_reserved;
    if (const auto gap = kAsyncModelGaps.find(job); gap != kAsyncModelGaps.end()) {
      EXPECT_NEAR(error, gap->second, 0.002) << "the measured error changed: update kAsyncModelGaps";
    } else {
      EXPECT_NEAR(model, live_reserved, std::max(0.03 * live_reserved, double(kChunk)));
    }
    ++runs;
  }
  EXPECT_EQ(runs, 7u) << "*.asyncpool.json in " << pools;
}

}  // namespace
}  // namespace memreplay
