// What a trace says of CUDA graph captures reaches the policy: an alloc flagged kCaptured is a
// capture's; in a trace whose header says captures are flagged, an unflagged one is not; a pool of
// kind "graph" is always a capture's; anything else is unknown. pytorch@2.13 decides by it (a
// MemPool's allocation outside a capture may release the cache and retry), and a replay with it
// warns where the trace cannot say.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "proto/event.h"
#include "proto/trace.pb.h"
#include "proto/trace_writer.h"
#include "replayer/replay_runner.h"
#include "tests/support/cli_run.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

constexpr uint64_t MiB = 1ull << 20;

class GraphCaptureReplay : public testing::TempDirTest {
 protected:
  // A 12 MiB block of the default pool, freed (its segment stays cached), then 30 MiB in pool 1,
  // flagged or not; under a 40 MiB cap only a release of the cache lets the second one fit.
  std::string trace(const std::string& name, bool captures_flagged, const std::string& pool_kind,
                    bool flagged_captured) {
    const std::string file = path(name);
    TraceWriter writer(file);
    proto::TraceHeader header;
    header.set_source("api");
    header.set_captures_flagged(captures_flagged);
    proto::PoolInfo* pool = header.add_pools();
    pool->set_id(1);
    pool->set_kind(pool_kind);
    writer.begin(header);
    writer.append(Event{.kind = EventKind::alloc, .time_ns = 1, .address = 0x1000000, .size = 12 * MiB});
    writer.append(Event{.kind = EventKind::free_completed, .time_ns = 2, .address = 0x1000000});
    Event in_pool{.kind = EventKind::alloc, .pool = 1, .time_ns = 3, .address = 0x8000000, .size = 30 * MiB};
    if (flagged_captured) in_pool.flags = kCaptured;
    writer.append(in_pool);
    writer.finish();
    return file;
  }

  static ReplayMetrics replay(const std::string& file, const std::string& policy) {
    ReplayOptions options;
    options.trace_path = file;
    options.policy_spec = policy;
    options.capacity = 40 * MiB;
    options.continue_after_oom = true;
    return run_replay(options);
  }
};

TEST_F(GraphCaptureReplay, AnUnflaggedAllocationOfAFlaggingTraceIsOutsideACapture) {
  const ReplayMetrics m = replay(trace("mempool.mrt", true, "mempool", false), "pytorch@2.13");
  EXPECT_EQ(m.ooms, 0u);
  EXPECT_EQ(m.alloc_retries, 1u);
  EXPECT_EQ(m.device_free_calls, 1u);
  EXPECT_EQ(replay(path("mempool.mrt"), "pytorch").ooms, 1u);  // 2.11 skips the rung in every pool
}

TEST_F(GraphCaptureReplay, AFlaggedAllocationAGraphPoolOrATraceThatCannotSayIsACapture) {
  for (const auto& [name, flags, kind, captured] :
       {std::tuple{"flagged.mrt", true, "mempool", true}, std::tuple{"graph.mrt", false, "graph", false},
        std::tuple{"snapshot_like.mrt", false, "mempool", false}}) {
    const ReplayMetrics m = replay(trace(name, flags, kind, captured), "pytorch@2.13");
    EXPECT_EQ(m.ooms, 1u) << name;
    EXPECT_EQ(m.alloc_retries, 0u) << name;
  }
}

TEST_F(GraphCaptureReplay, AReplayThatCannotTellWarnsOnceAndOneThatCanDoesNot) {
  const std::string unknown = trace("unknown.mrt", false, "mempool", false);
  const std::string warning = "does not say which allocations in its MemPool-like pools";
  auto r = testing::run_memreplay("replay " + unknown + " --policy pytorch@2.13 --capacity 40MiB", dir_);
  EXPECT_NE(r.err.find(unknown + ": the trace " + warning), std::string::npos) << r.err;
  r = testing::run_memreplay("replay " + unknown + " --policy pytorch --capacity 40MiB", dir_);
  EXPECT_EQ(r.err.find(warning), std::string::npos) << r.err;  // 2.11 does not decide by it
  for (const std::string& known : {trace("known.mrt", true, "mempool", false), trace("g.mrt", false, "graph", false)}) {
    r = testing::run_memreplay("replay " + known + " --policy pytorch@2.13 --capacity 40MiB", dir_);
    EXPECT_EQ(r.err.find(warning), std::string::npos) << known << "\n" << r.err;
  }
}

TEST_F(GraphCaptureReplay, InfoCountsTheAllocationsMadeUnderACaptureWhereTheTraceSays) {
  auto r = testing::run_memreplay("info " + trace("flagged.mrt", true, "mempool", true) + " --json -", dir_);
  ASSERT_EQ(r.status, 0) << r.err;
  auto info = nlohmann::json::parse(r.out);
  EXPECT_TRUE(info["captures_flagged"].get<bool>());
  EXPECT_EQ(info["devices"][0]["pools"]["1"]["captured_allocs"], 1);
  EXPECT_EQ(info["devices"][0]["pools"]["0"]["captured_allocs"], 0);
  r = testing::run_memreplay("info " + trace("unsaid.mrt", false, "mempool", false) + " --json -", dir_);
  ASSERT_EQ(r.status, 0) << r.err;
  info = nlohmann::json::parse(r.out);
  EXPECT_FALSE(info["captures_flagged"].get<bool>());
  EXPECT_TRUE(info["devices"][0]["pools"]["1"]["captured_allocs"].is_null());
}

}  // namespace
}  // namespace memreplay
