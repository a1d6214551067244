// A sweep's plan: the tasks of N shards are the fleet's tasks, each exactly once; manifests,
// globs and policy lists read as documented, bad ones refused in one line naming the place.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>

#include "proto/input_error.h"
#include "results/sweep_plan.h"
#include "tests/support/sweep_lines.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

using results::SweepCapacity;
using results::SweepPlan;

class SweepPlanTest : public testing::TempDirTest {
 protected:
  void write(const std::string& name, const std::string& text) { std::ofstream(path(name)) << text; }
};

SweepPlan real_fleet_plan() {
  SweepPlan plan;
  for (const auto& [name, trace] : testing::real_traces()) plan.traces.push_back(trace);
  plan.policies = results::expand_policies({"all", "pytorch:expandable_segments:True"});
  plan.capacities = {SweepCapacity{}, SweepCapacity::fit(), SweepCapacity::at(uint64_t{4} << 30)};
  return plan;
}

std::vector<std::string> keys_of(const SweepPlan& plan) {
  std::vector<std::string> keys;
  results::for_each_task(plan, [&](results::SweepTask&& task) { keys.push_back(results::task_key(task)); });
  return keys;
}

TEST(SweepPlan, ShardsCoverEveryTaskExactlyOnce) {
  SweepPlan plan = real_fleet_plan();
  const std::vector<std::string> all = keys_of(plan);
  ASSERT_EQ(all.size(), 9 * plan.policies.size() * 3);
  ASSERT_EQ(std::set<std::string>(all.begin(), all.end()).size(), all.size());
  for (uint64_t count : {1, 2, 3, 7, 16, 600}) {
    std::map<std::string, int> seen;
    for (uint64_t index = 0; index < count; ++index) {
      plan.shard = {index, count};
      for (const auto& key : keys_of(plan)) ++seen[key];
    }
    ASSERT_EQ(seen.size(), all.size()) << count << " shards";
    for (const auto& [key, times] : seen) EXPECT_EQ(times, 1) << key << " in " << count << " shards";
  }
}

TEST(SweepPlan, ShardOfATaskIsTheSameOnEveryRun) {
  // The hash is FNV-1a over the key's bytes: fixed values, whatever the machine or build.
  EXPECT_EQ(results::stable_hash(""), 14695981039346656037ull);
  EXPECT_EQ(results::stable_hash("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(results::task_key("job", "pytorch", "fit"), "job\tpytorch\tfit");
}

TEST(SweepPlan, ShardTextIsIndexSlashCount) {
  EXPECT_EQ(results::parse_shard("3/16").index, 3u);
  EXPECT_EQ(results::parse_shard("3/16").count, 16u);
  for (const char* bad : {"16/16", "1", "a/2", "1/0", "-1/4", "1/2/3", ""})
    EXPECT_NE(testing::error_of<InputError>([&] { results::parse_shard(bad); }).find("--shard"), std::string::npos)
        << bad;
}

TEST(SweepPlan, CapacitiesAreNoneFitOrSizes) {
  EXPECT_EQ(results::parse_sweep_capacity("none"), SweepCapacity{});
  EXPECT_EQ(results::parse_sweep_capacity("fit"), SweepCapacity::fit());
  EXPECT_EQ(results::parse_sweep_capacity("40GiB"), SweepCapacity::at(uint64_t{40} << 30));
  EXPECT_EQ(results::parse_sweep_capacity("80GB"), SweepCapacity::at(80000000000ull));
  EXPECT_NE(testing::error_of<InputError>([] { results::parse_sweep_capacity("lots"); }).find("'lots'"),
            std::string::npos);
  for (const auto& c : {SweepCapacity{}, SweepCapacity::fit(), SweepCapacity::at(123)})
    EXPECT_EQ(results::capacity_from_json(results::capacity_json(c)), c);
}

TEST(SweepPlan, AllIsEveryRegisteredPolicyAndUnknownNamesAreRefused) {
  const auto all = results::expand_policies({});
  EXPECT_EQ(all, results::expand_policies({"all"}));
  EXPECT_NE(std::find(all.begin(), all.end(), "pytorch"), all.end());
  EXPECT_NE(std::find(all.begin(), all.end(), "gmlake"), all.end());
  EXPECT_EQ(results::expand_policies({"pytorch:expandable_segments:True"}).size(), 1u);
  EXPECT_NE(testing::error_of<InputError>([] { results::expand_policies({"tcmalloc"}); }).find("'tcmalloc'"),
            std::string::npos);
}

TEST_F(SweepPlanTest, ManifestNamesTracesAndResolvesRelativePaths) {
  write("fleet.tsv", "# nightly fleet\n\njob-a\tdir/a.mrt\njob-b\t/abs/b.mrt\nplain.mrt\r\n");
  SweepPlan plan;
  plan.manifests = {path("fleet.tsv")};
  std::vector<std::pair<std::string, std::string>> seen;
  results::for_each_trace(plan, [&](std::string trace, std::string name) { seen.emplace_back(name, trace); });
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"job-a", path("dir/a.mrt")}, {"job-b", "/abs/b.mrt"}, {"plain.mrt", path("plain.mrt")}};
  EXPECT_EQ(seen, expected);
}

TEST_F(SweepPlanTest, BadManifestLineIsNamedByFileAndLine) {
  write("fleet.tsv", "job-a\ta.mrt\n\tb.mrt\n");
  SweepPlan plan;
  plan.manifests = {path("fleet.tsv")};
  const std::string error =
      testing::error_of<InputError>([&] { results::for_each_trace(plan, [](std::string, std::string) {}); });
  EXPECT_NE(error.find(path("fleet.tsv") + ": line 2:"), std::string::npos) << error;
  plan.manifests = {path("missing.tsv")};
  EXPECT_NE(testing::error_of<InputError>([&] {
              results::for_each_trace(plan, [](std::string, std::string) {});
            }).find("missing.tsv: cannot read"),
            std::string::npos);
}

TEST_F(SweepPlanTest, GlobsExpandSortedAndOneWithoutMatchesIsRefused) {
  write("b.mrt", "");
  write("a.mrt", "");
  SweepPlan plan;
  plan.traces = {path("*.mrt"), path("explicit.mrt")};
  std::vector<std::string> seen;
  results::for_each_trace(plan, [&](std::string trace, std::string name) {
    EXPECT_EQ(trace, name);
    seen.push_back(trace);
  });
  EXPECT_EQ(seen, (std::vector<std::string>{path("a.mrt"), path("b.mrt"), path("explicit.mrt")}));
  plan.traces = {path("*.pickle")};
  EXPECT_NE(testing::error_of<InputError>([&] {
              results::for_each_trace(plan, [](std::string, std::string) {});
            }).find("no trace matches"),
            std::string::npos);
}

}  // namespace
}  // namespace memreplay
