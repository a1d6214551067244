// What advise, fit, compare, replay and policies print is readable: every line within 120
// columns, one unit per column, fit --capacity echoes the capacity as given and in GiB with the
// headroom, the simulated device's memory is named where a policy takes a share of it up front,
// --keep-going says how many allocations failed, and "complete" means one thing.
#include <gtest/gtest.h>

#include <sstream>

#include <nlohmann/json.hpp>

#include "base/units.h"
#include "results/text_table.h"
#include "tests/support/cli_run.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

class ReadableOutput : public testing::CliTest {};

void expect_within_120_columns(const std::string& command, const std::string& out) {
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);)
    EXPECT_LE(results::display_width(line), 120u) << command << "\n" << line;
}

TEST_F(ReadableOutput, EveryLineFitsIn120Columns) {
  const std::string gpt2 = testing::imported_trace("gpt2_train.default");
  const std::string vit = testing::imported_trace("vit_infer_varbatch.emptycache");
  for (const std::string command :
       {"compare " + gpt2 + " --policy all", "compare " + vit + " --policy all --capacity 1.2GiB --keep-going",
        "compare " + gpt2 +
            " --policy pytorch:expandable_segments:True,max_split_size_mb:64,roundup_power2_divisions:4",
        "replay " + vit + " --policy pytorch", "advise " + vit, "advise " + gpt2 + " --capacity 7.4GiB --no-fit",
        "fit " + vit + " --policy pytorch --policy rmm_arena", "fit " + gpt2 + " --capacity 7.4GiB",
        std::string("policies")}) {
    const auto r = run(command);
    EXPECT_LE(r.status, 1) << command << "\n" << r.err;
    expect_within_120_columns(command, r.out);
  }
}

TEST_F(ReadableOutput, OneUnitPerColumn) {
  // Reserved peaks from 0.97 GiB (passthrough) to 139.80 GiB (bfc): all in GiB, the unit in the header.
  const auto r = run("compare " + testing::imported_trace("vit_infer_varbatch.default") + " --policy all");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("peak GiB"), std::string::npos) << r.out;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);)
    if (line.find("passthrough") != std::string::npos || line.find("bfc ") != std::string::npos) {
      EXPECT_EQ(line.find("MiB"), std::string::npos) << line;
      EXPECT_EQ(line.find("GiB"), std::string::npos) << line;
    }
}

TEST_F(ReadableOutput, FitAtACapacityEchoesItAndTheHeadroom) {
  const auto r = run("fit " + testing::imported_trace("gpt2_train.default") + " --policy pytorch --capacity 40GB");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("pytorch at 40GB (37.25 GiB): fits"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(
      run("fit " + testing::imported_trace("gpt2_train.default") + " --policy pytorch --capacity 40GB --json -").out);
  const uint64_t headroom = 40'000'000'000ull - j["metrics"]["reserved_peak"].get<uint64_t>();
  EXPECT_EQ(j["headroom_bytes"], headroom);
  EXPECT_NE(r.out.find("headroom " + format_bytes(headroom)), std::string::npos) << r.out;
}

TEST_F(ReadableOutput, TheSimulatedDevicesMemoryIsNamedWhereAPolicyTakesItUpFront) {
  const auto r = run("compare " + testing::imported_trace("gpt2_train.default") + " --policy pytorch --policy bfc");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("bfc reserves up front"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("simulated device's memory (the trace's GPU) 139.80 GiB"), std::string::npos) << r.out;
  const auto policies = run("policies");
  EXPECT_NE(policies.out.find("The simulated device (sim) has 139.80 GiB"), std::string::npos) << policies.out;
  EXPECT_NE(policies.out.find("reserves up front: its arena"), std::string::npos) << policies.out;
  const auto j = nlohmann::json::parse(run("policies --json -").out);
  EXPECT_EQ(j["sim_device_memory"], 150'109'880'320ull);
}

TEST_F(ReadableOutput, KeepGoingCountsTheOomsAndCompleteMeansEveryEventReplayed) {
  const std::string trace = testing::imported_trace("gpt2_train.default");
  const auto stopped = nlohmann::json::parse(run("replay " + trace + " --capacity 7.4GiB --json -").out);
  EXPECT_EQ(stopped["ooms"], 1);
  EXPECT_TRUE(stopped["stopped_at_oom"].get<bool>());
  EXPECT_FALSE(stopped["complete"].get<bool>()) << "the events after the OOM were not replayed";
  EXPECT_TRUE(stopped["trace_complete"].get<bool>());
  const auto going = nlohmann::json::parse(run("replay " + trace + " --capacity 7.4GiB --keep-going --json -").out);
  EXPECT_GT(going["ooms"].get<uint64_t>(), 1u);
  EXPECT_TRUE(going["complete"].get<bool>());
  const auto text = run("replay " + trace + " --capacity 7.4GiB --keep-going");
  EXPECT_NE(text.out.find(std::to_string(going["ooms"].get<uint64_t>()) + " allocations failed in all"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("complete: every event of a whole trace replayed"), std::string::npos) << text.out;
}

}  // namespace
}  // namespace memreplay
