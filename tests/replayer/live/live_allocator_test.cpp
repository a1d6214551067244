#include "replayer/live/live_allocator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <thread>

#include "base/units.h"
#include "policies/registry.h"
#include "proto/trace_reader.h"
#include "replayer/live/live_trace.h"
#include "replayer/replay_runner.h"
#include "replayer/sim/sim_device.h"
#include "replayer/trace_summary.h"
#include "tests/replayer/live/fake_stream_order.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

using namespace memreplay::literals;
using testing::FakeStreamOrder;
using testing::StreamOrderLog;

constexpr StreamId kStreamA = 0x1000;
constexpr StreamId kStreamB = 0x2000;
constexpr StreamId kStreamC = 0x3000;

std::unique_ptr<LiveAllocator> make_allocator(const std::string& spec, StreamOrderLog& log,
                                              std::optional<uint64_t> capacity = std::nullopt,
                                              AllocationObserver* observer = nullptr) {
  SimDevice::Options options;
  options.capacity = capacity;
  return std::make_unique<LiveAllocator>(std::make_unique<SimDevice>(options), spec,
                                         std::make_unique<FakeStreamOrder>(log), observer);
}

TEST(LiveAllocator, ServesAllocationsThroughThePolicy) {
  StreamOrderLog log;
  auto allocator = make_allocator("bfc", log);
  const auto a = allocator->allocate(1_MiB, kStreamA);
  const auto b = allocator->allocate(3000, kStreamA);
  ASSERT_TRUE(a && b);
  EXPECT_NE(*a, *b);
  auto stats = allocator->stats();
  EXPECT_EQ(stats["requested_bytes.all.current"], 1_MiB + 3000);
  EXPECT_GE(stats["allocated_bytes.all.current"], 1_MiB + 3000);
  EXPECT_GE(stats["reserved_bytes.all.current"], stats["allocated_bytes.all.current"]);
  EXPECT_EQ(stats["allocation.all.current"], 2u);
  EXPECT_TRUE(allocator->free(*a));
  EXPECT_TRUE(allocator->free(*b));
  EXPECT_FALSE(allocator->free(*b)) << "a second free of the same block";
  stats = allocator->stats();
  EXPECT_EQ(stats["allocated_bytes.all.current"], 0u);
  EXPECT_EQ(stats["allocation.all.allocated"], 2u);
  EXPECT_TRUE(allocator->used());
}

TEST(LiveAllocator, ABadSpecIsAPolicySpecError) {
  StreamOrderLog log;
  EXPECT_THROW(make_allocator("no_such_policy", log), PolicySpecError);
  EXPECT_THROW(make_allocator("pytorch:no_such_option:1", log), PolicySpecError);
}

TEST(LiveAllocator, ABlockFreedOnOneStreamMakesTheNextStreamWait) {
  StreamOrderLog log;
  auto allocator = make_allocator("bfc", log);
  const auto x = allocator->allocate(8_MiB, kStreamA);
  ASSERT_TRUE(x);
  ASSERT_TRUE(allocator->free(*x));  // work on A may still read x
  const auto y = allocator->allocate(8_MiB, kStreamB);
  ASSERT_TRUE(y);
  ASSERT_EQ(*y, *x) << "bfc hands the freed block to the other stream (the case under test)";
  ASSERT_EQ(log.waits.size(), 1u);
  EXPECT_EQ(log.waits[0], std::make_pair(kStreamB, kStreamA)) << "B waits for A before it may write y";
  EXPECT_EQ(allocator->stats()["cross_stream_waits"], 1u);
}

TEST(LiveAllocator, ReuseOnTheSameStreamNeedsNoWait) {
  StreamOrderLog log;
  auto allocator = make_allocator("bfc", log);
  for (int i = 0; i < 10; ++i) {
    const auto x = allocator->allocate(8_MiB, kStreamA);
    ASSERT_TRUE(x);
    ASSERT_TRUE(allocator->free(*x));
  }
  EXPECT_TRUE(log.waits.empty());
}

TEST(LiveAllocator, RecordStreamMakesEveryUserOfTheBlockAWaitOfItsNextOwner) {
  StreamOrderLog log;
  auto allocator = make_allocator("bfc", log);
  const auto x = allocator->allocate(8_MiB, kStreamA);
  ASSERT_TRUE(x);
  EXPECT_TRUE(allocator->record_stream(*x, kStreamC));  // a copy on C reads x
  EXPECT_FALSE(allocator->record_stream(*x + 1, kStreamC)) << "not a block's address";
  ASSERT_TRUE(allocator->free(*x));
  const auto y = allocator->allocate(8_MiB, kStreamA);
  ASSERT_EQ(y, x);
  ASSERT_EQ(log.waits.size(), 1u);
  EXPECT_EQ(log.waits[0], std::make_pair(kStreamA, kStreamC)) << "A's own work is ordered, C's is not";
  // Once handed out, the fence is gone: the next reuse on A waits for nothing.
  ASSERT_TRUE(allocator->free(*y));
  ASSERT_TRUE(allocator->allocate(8_MiB, kStreamA));
  EXPECT_EQ(log.waits.size(), 1u);
}

TEST(LiveAllocator, EmptyCacheSynchronizesThenGivesTheCacheBack) {
  StreamOrderLog log;
  auto allocator = make_allocator("memreplay", log);
  std::vector<uint64_t> blocks;
  for (int i = 0; i < 8; ++i) blocks.push_back(*allocator->allocate(5_MiB + static_cast<uint64_t>(i) * 4096, kStreamA));
  for (const uint64_t b : blocks) ASSERT_TRUE(allocator->free(b));
  EXPECT_GT(allocator->stats()["reserved_bytes.all.current"], 0u);
  allocator->empty_cache();
  EXPECT_EQ(log.synchronizations, 1);
  EXPECT_EQ(allocator->stats()["reserved_bytes.all.current"], 0u);
  // Nothing is fenced after a synchronization: another stream takes memory without a wait.
  ASSERT_TRUE(allocator->allocate(5_MiB, kStreamB));
  EXPECT_TRUE(log.waits.empty());
}

TEST(LiveAllocator, OutOfMemoryIsAResultWithThePolicysNumbers) {
  StreamOrderLog log;
  auto allocator = make_allocator("bfc", log, 64_MiB);
  const auto small = allocator->allocate(16_MiB, kStreamA);
  ASSERT_TRUE(small);
  EXPECT_FALSE(allocator->allocate(100_MiB, kStreamA));
  const std::string message = allocator->oom_message();
  EXPECT_NE(message.find("policy 'bfc'"), std::string::npos) << message;
  EXPECT_NE(message.find("tried to allocate 100.00 MiB"), std::string::npos) << message;
  EXPECT_NE(message.find("cap of 64.00 MiB"), std::string::npos) << message;
  EXPECT_EQ(allocator->stats()["num_ooms"], 1u);
  EXPECT_TRUE(allocator->free(*small)) << "the allocator keeps working after an OOM";
}

// Many threads allocating and freeing at once, as autograd's do: every block is a distinct range
// while it lives, and the books balance at the end. Runs under ThreadSanitizer (.ci/run).
TEST(LiveAllocatorThreads, ManyThreadsAllocateAndFreeAtOnce) {
  StreamOrderLog log;
  auto allocator = make_allocator("memreplay", log);
  constexpr int kThreads = 8;
  constexpr int kSteps = 1500;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      std::mt19937_64 random(static_cast<uint64_t>(t) + 1);
      std::vector<uint64_t> mine;
      const StreamId stream = t % 2 == 0 ? kStreamA : kStreamB;
      for (int i = 0; i < kSteps; ++i) {
        if (mine.empty() || random() % 3 != 0) {
          const auto block = allocator->allocate(512 + random() % (4_MiB), stream);
          if (!block)
            ++failures;
          else
            mine.push_back(*block);
          if (block) allocator->record_stream(*block, kStreamC);
        } else {
          const size_t pick = random() % mine.size();
          if (!allocator->free(mine[pick])) ++failures;
          mine.erase(mine.begin() + static_cast<std::ptrdiff_t>(pick));
        }
        if (i % 500 == 499) allocator->stats();
      }
      for (const uint64_t block : mine)
        if (!allocator->free(block)) ++failures;
    });
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  auto stats = allocator->stats();
  EXPECT_EQ(stats["allocated_bytes.all.current"], 0u);
  EXPECT_EQ(stats["allocation.all.allocated"], stats["allocation.all.freed"]);
  EXPECT_GT(stats["reserved_bytes.all.peak"], 0u);
}

// A run under the policy, recorded, then replayed on the simulator with the same policy: the same
// decisions, so the same reserved peak and the same device calls, to the byte.
class LiveAllocatorReplay : public ::testing::TestWithParam<std::string>, protected testing::TempDir {
 protected:
  void SetUp() override { make_dir(); }
  void TearDown() override { remove_dir(); }
};

// A simulator replay of the run's trace under `spec` gives the run's own figures.
void expect_replay_gives(const std::string& trace_path, const std::string& spec,
                         std::map<std::string, uint64_t>& live) {
  ReplayOptions replay;
  replay.trace_path = trace_path;
  replay.policy_spec = spec;
  const ReplayMetrics metrics = run_replay(replay);
  EXPECT_EQ(metrics.reserved_peak, live["reserved_bytes.all.peak"]);
  EXPECT_EQ(metrics.allocated_peak, live["allocated_bytes.all.peak"]);
  EXPECT_EQ(metrics.device_alloc_calls, live["num_device_alloc"]);
  EXPECT_EQ(metrics.device_free_calls, live["num_device_free"]);
  EXPECT_EQ(total_device_calls(metrics), live["device_calls"]);
  EXPECT_EQ(metrics.ooms, live["num_ooms"]);
}

TEST_P(LiveAllocatorReplay, ASimulatorReplayOfTheRunsTraceMakesTheSameCalls) {
  const std::string spec = GetParam();
  const std::string trace_path = path("live.mrt");
  StreamOrderLog log;
  SimDevice::Options options;
  std::map<std::string, uint64_t> live;
  {
    LiveTrace trace(trace_path, MEMREPLAY_RECORD_LIB, LiveTraceHeader{spec, 0, options.total_memory, "simulated"});
    auto allocator = make_allocator(spec, log, std::nullopt, &trace);
    std::mt19937_64 random(7);
    std::vector<uint64_t> held;
    for (int i = 0; i < 4000; ++i) {
      const uint64_t roll = random() % 100;
      if (roll < 55 || held.empty()) {
        const uint64_t bytes = roll < 5 ? 64_MiB + random() % (64_MiB) : 512 + random() % (6_MiB);
        const StreamId stream = roll % 4 == 0 ? kStreamB : kStreamA;
        if (const auto block = allocator->allocate(bytes, stream)) held.push_back(*block);
      } else if (roll < 99) {
        const size_t pick = random() % held.size();
        ASSERT_TRUE(allocator->free(held[pick]));
        held.erase(held.begin() + static_cast<std::ptrdiff_t>(pick));
      } else {
        allocator->empty_cache();
      }
    }
    live = allocator->stats();
    ASSERT_TRUE(trace.close());
    EXPECT_EQ(trace.dropped(), 0u);
  }
  expect_replay_gives(trace_path, spec, live);
}

// CUDA graphs captured into private pools, eager work between, each pool released when its graph
// is destroyed (before its outputs are freed, or after): the trace records the releases, and its
// replay makes the same decisions, pools served apart (policies/private_pools.h) included.
TEST_P(LiveAllocatorReplay, AGraphPoolsRunReplaysToTheSameCalls) {
  const std::string spec = GetParam();
  if (spec == "bfc") GTEST_SKIP() << "takes the device's memory at its first request: none is left for a graph's pool";
  const std::string trace_path = path("graphs.mrt");
  StreamOrderLog log;
  SimDevice::Options options;
  std::map<std::string, uint64_t> live;
  {
    LiveTrace trace(trace_path, MEMREPLAY_RECORD_LIB, LiveTraceHeader{spec, 0, options.total_memory, "simulated"});
    auto allocator = make_allocator(spec, log, std::nullopt, &trace);
    std::mt19937_64 random(11);
    std::vector<uint64_t> eager;
    std::map<PoolId, std::vector<uint64_t>> outputs;  // each graph's blocks still live
    const auto some_bytes = [&] { return random() % 5 == 0 ? 8_MiB + random() % 56_MiB : 512 + random() % 4_MiB; };
    for (PoolId pool = 1; pool <= 6; ++pool) {
      // As the extension names them: a capture's own pool (N, 0), or a shared graph_pool_handle() (0, N).
      allocator->name_pool(
          pool, pool % 3 == 0 ? std::pair<uint64_t, uint64_t>{0, pool} : std::pair<uint64_t, uint64_t>{pool, 0},
          pool % 3 == 0 ? "mempool" : "graph");
      for (int i = 0; i < 300; ++i) {  // eager work
        if (random() % 100 < 55 || eager.empty()) {
          if (const auto block = allocator->allocate(some_bytes(), kStreamA)) eager.push_back(*block);
        } else {
          const size_t pick = random() % eager.size();
          ASSERT_TRUE(allocator->free(eager[pick]));
          eager.erase(eager.begin() + static_cast<std::ptrdiff_t>(pick));
        }
      }
      std::vector<uint64_t> temporaries;
      for (int i = 0; i < 80; ++i) {  // a capture: temporaries freed inside it, outputs kept
        const auto block = allocator->allocate(some_bytes(), kStreamB, pool);
        ASSERT_TRUE(block.has_value());
        (random() % 4 == 0 ? outputs[pool] : temporaries).push_back(*block);
        if (temporaries.size() > 4) {
          ASSERT_TRUE(allocator->free(temporaries.front()));
          temporaries.erase(temporaries.begin());
        }
      }
      for (const uint64_t block : temporaries) ASSERT_TRUE(allocator->free(block));
      if (pool % 2 == 0) {  // the graph before this one is destroyed: its outputs first, or after
        const PoolId gone = pool - 1;
        if (pool % 4 == 0) allocator->release_pool(gone);
        for (const uint64_t block : outputs[gone]) ASSERT_TRUE(allocator->free(block));
        outputs.erase(gone);
        if (pool % 4 != 0) allocator->release_pool(gone);
      }
      if (pool == 3) allocator->empty_cache();
    }
    live = allocator->stats();
    ASSERT_TRUE(trace.close());
    EXPECT_EQ(trace.dropped(), 0u);
  }
  expect_replay_gives(trace_path, spec, live);
  EXPECT_GT(live["num_device_free"], 0u) << "the released pools gave nothing back";
  // The trace names each pool as the PyTorch tracker would (what `memreplay info` lists).
  TraceReader reader(trace_path);
  const TraceSummary summary = summarize_trace(reader, 0);
  ASSERT_EQ(summary.pools.size(), 6u);
  for (const PoolName& pool : summary.pools) {
    const bool shared = pool.id % 3 == 0;
    EXPECT_EQ(pool.kind, shared ? "mempool" : "graph") << "pool " << pool.id;
    EXPECT_EQ(pool.torch_id_first, shared ? 0u : pool.id) << "pool " << pool.id;
    EXPECT_EQ(pool.torch_id_second, shared ? pool.id : 0u) << "pool " << pool.id;
  }
}

// A capped run records its cap in the trace header: its replay, given no capacity, runs under it
// and retries where the run retried.
TEST_F(LiveAllocatorReplay, ACappedRunsTraceReplaysUnderTheCapItRecorded) {
  const std::string trace_path = path("capped.mrt");
  const uint64_t cap = 96_MiB;
  StreamOrderLog log;
  std::map<std::string, uint64_t> live;
  {
    LiveTrace trace(trace_path, MEMREPLAY_RECORD_LIB,
                    LiveTraceHeader{"pytorch", 0, SimDevice::Options{}.total_memory, "simulated", cap});
    auto allocator = make_allocator("pytorch", log, cap, &trace);
    std::vector<uint64_t> held;
    for (uint64_t step = 0; step < 40; ++step) {  // growing tensors: old segments stay cached, then a retry
      for (uint64_t i = 0; i < 3; ++i)
        if (const auto block = allocator->allocate((10 + step) * 1_MiB / 2, kStreamA)) held.push_back(*block);
      for (const uint64_t block : held) ASSERT_TRUE(allocator->free(block));
      held.clear();
    }
    live = allocator->stats();
    ASSERT_TRUE(trace.close());
  }
  ASSERT_GT(live["num_alloc_retries"], 0u);
  ReplayOptions replay;
  replay.trace_path = trace_path;
  ASSERT_TRUE(use_recorded_capacity(replay).has_value());
  EXPECT_EQ(replay.capacity, cap);
  const ReplayMetrics metrics = run_replay(replay);
  EXPECT_EQ(metrics.alloc_retries, live["num_alloc_retries"]);
  EXPECT_EQ(metrics.reserved_peak, live["reserved_bytes.all.peak"]);
  EXPECT_EQ(metrics.device_free_calls, live["num_device_free"]);
}

INSTANTIATE_TEST_SUITE_P(Policies, LiveAllocatorReplay,
                         ::testing::Values("memreplay", "bfc", "pytorch", "pytorch:expandable_segments:True"),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace_if(
                               name.begin(), name.end(), [](char c) { return !std::isalnum(c); }, '_');
                           return name;
                         });

}  // namespace
}  // namespace memreplay
