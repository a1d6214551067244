// The memreplay policy as the allocator of live PyTorch jobs (tests/data/live_policy/runs: the
// four workloads of tools/gpu/live_policy_check.sh on an H100, CUDA graphs among them, README there): the reserved peak
// and the device calls each run reported at its end (memreplay.torch.live_stats()) equal a
// simulator replay of the trace the same run recorded, under the same policy, to the byte. The
// runs used today's policy: a change to it that changes these replays needs the GPU runs again.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "proto/trace_reader.h"
#include "replayer/replay_runner.h"
#include "replayer/trace_summary.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

std::filesystem::path runs_dir() { return testing::source_dir() / "tests/data/live_policy/runs"; }

std::vector<std::string> runs() {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(runs_dir()))
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(MemreplayLiveRuns, EveryWorkloadHasARun) {
  EXPECT_EQ(runs(), (std::vector<std::string>{"gpt", "graphs", "resnet18", "vit_infer"}));
}

class MemreplayLiveRun : public ::testing::TestWithParam<std::string> {};

TEST_P(MemreplayLiveRun, TheSimulatorReplaysTheRunsOwnFigures) {
  std::ifstream in(runs_dir() / (GetParam() + ".memreplay.json"));
  ASSERT_TRUE(in) << "missing run figures";
  const auto run = nlohmann::json::parse(in);
  const auto& live = run.at("stats");
  ASSERT_EQ(run.at("allocator").get<std::string>(), "policy:" + live.at("policy").get<std::string>());
  ReplayOptions options;
  options.trace_path = (runs_dir() / (GetParam() + ".memreplay.mrt")).string();
  options.policy_spec = live.at("policy").get<std::string>();
  const ReplayMetrics replay = run_replay(options);
  EXPECT_FALSE(replay.oom_at_event);
  EXPECT_EQ(replay.reserved_peak, live.at("reserved_bytes.all.peak").get<uint64_t>());
  EXPECT_EQ(replay.device_alloc_calls, live.at("num_device_alloc").get<uint64_t>());
  EXPECT_EQ(replay.device_free_calls, live.at("num_device_free").get<uint64_t>());
  EXPECT_EQ(replay.requested_peak, live.at("requested_bytes.all.peak").get<uint64_t>());
  EXPECT_GT(live.at("num_device_alloc").get<uint64_t>(), 0u) << "the run's figures are real: it mapped memory";
}

// The graphs run's trace says which allocations were the graph's: its one private pool, named as
// the PyTorch recorder names a capture's own pool, holds the captured step's blocks.
TEST(MemreplayLiveRuns, TheGraphsRunsTraceNamesItsGraphPool) {
  TraceReader reader((runs_dir() / "graphs.memreplay.mrt").string());
  const TraceSummary summary = summarize_trace(reader, 0);
  ASSERT_EQ(summary.pools.size(), 1u);
  EXPECT_EQ(summary.pools[0].kind, "graph");
  EXPECT_EQ(summary.pools[0].torch_id_first, 1u);
  EXPECT_EQ(summary.pools[0].torch_id_second, 0u);
  ASSERT_EQ(summary.devices.size(), 1u);
  const auto pool = summary.devices[0].pools.find(summary.pools[0].id);
  ASSERT_NE(pool, summary.devices[0].pools.end());
  EXPECT_GT(pool->second.allocs, 0u);
  EXPECT_GT(pool->second.peak_requested_bytes, 0u);
}

INSTANTIATE_TEST_SUITE_P(LivePolicyRuns, MemreplayLiveRun, ::testing::ValuesIn(runs()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace memreplay
