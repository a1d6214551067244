// sweep-summary's verdicts against brute force: the best setting of every real trace is the one
// a replay of every candidate picks by the stated rule, and every "fits on 24/40/80 GiB" it
// claims is what a replay at that capacity does. Shards merge to the whole sweep.
#include <gtest/gtest.h>

#include <filesystem>

#include "replayer/replay_runner.h"
#include "results/best_setting.h"
#include "results/sweep.h"
#include "results/sweep_summary.h"
#include "tests/support/sweep_lines.h"
#include "tests/support/test_support.h"
#include "tools/bench/scaled_trace.h"

namespace memreplay {
namespace {

using results::Fits;
using results::SweepCapacity;

const std::vector<std::string> kPolicies = {
    "pytorch", "pytorch:expandable_segments:True", "memreplay", "gmlake", "cuda_async", "rmm_pool"};

ReplayMetrics replay(const std::string& trace, const std::string& policy, std::optional<uint64_t> capacity) {
  ReplayOptions options;
  options.trace_path = trace;
  options.policy_spec = policy;
  options.capacity = capacity;
  return run_replay(options);
}

class SweepSummaryTest : public testing::TempDirTest {
 protected:
  std::string sweep(results::SweepPlan plan, const std::string& name, results::SweepSettings settings = {}) {
    results::SweepRunOptions options;
    options.output = path(name);
    options.jobs = 2;
    options.settings = settings;
    results::run_sweep(plan, options);
    return path(name);
  }
};

TEST_F(SweepSummaryTest, BestSettingIsWhatReplayingEveryCandidatePicks) {
  results::SweepPlan plan;
  for (const auto& [name, trace] : testing::real_traces()) plan.traces.push_back(trace);
  plan.policies = kPolicies;
  plan.capacities = {SweepCapacity{}};
  const auto summary = results::summarize_sweep({sweep(plan, "all.jsonl")});
  const double factor = results::kDeviceCallFactor;
  ASSERT_EQ(summary.traces.size(), 9u);
  uint64_t saved = 0, improved = 0;
  for (const auto& verdict : summary.traces) {
    // Brute force: every candidate replayed again, the rule applied by hand.
    std::vector<ReplayMetrics> runs;
    for (const auto& policy : kPolicies) runs.push_back(replay(verdict.trace, policy, std::nullopt));
    const uint64_t current_calls = runs[0].device_alloc_calls + runs[0].device_free_calls;
    uint64_t lowest = UINT64_MAX;
    for (const auto& m : runs)
      if (!m.oom_at_event && double(m.device_alloc_calls + m.device_free_calls) <= factor * double(current_calls))
        lowest = std::min(lowest, m.reserved_peak);
    ASSERT_TRUE(verdict.best_policy()) << verdict.name;
    const auto chosen = std::find(kPolicies.begin(), kPolicies.end(), verdict.best_policy()->policy);
    ASSERT_NE(chosen, kPolicies.end());
    const ReplayMetrics& best = runs[chosen - kPolicies.begin()];
    EXPECT_EQ(best.reserved_peak, lowest) << verdict.name << ": " << *chosen;
    EXPECT_FALSE(best.oom_at_event);
    EXPECT_LE(double(best.device_alloc_calls + best.device_free_calls), factor * double(current_calls));
    EXPECT_EQ(verdict.saved_bytes, runs[0].reserved_peak - lowest) << verdict.name;
    saved += verdict.saved_bytes;
    improved += verdict.saved_bytes > 0;
  }
  EXPECT_EQ(summary.totals.saved_bytes, saved);
  EXPECT_EQ(summary.totals.traces_with_saving, improved);
  EXPECT_GT(improved, 0u);  // the rule has something to pick on the real traces
  EXPECT_EQ(summary.totals.tasks, 9u * kPolicies.size());
}

// Every verdict the summary is sure of, against a replay at that capacity; returns how many of
// each it claimed.
std::map<Fits, int> check_fits_by_replay(const results::SweepSummary& summary) {
  std::map<Fits, int> claimed;
  for (const auto& verdict : summary.traces)
    for (const results::PolicyVerdict* p : {verdict.current_policy(), verdict.best_policy()}) {
      if (!p) continue;
      for (size_t g = 0; g < summary.options.gpu_bytes.size(); ++g) {
        ++claimed[p->fits[g]];
        if (p->fits[g] == Fits::unknown) continue;
        const bool fits = !replay(verdict.trace, p->policy, summary.options.gpu_bytes[g]).oom_at_event;
        EXPECT_EQ(fits, p->fits[g] == Fits::yes)
            << verdict.name << " " << p->policy << " at " << summary.options.gpu_bytes[g];
      }
    }
  return claimed;
}

TEST_F(SweepSummaryTest, FitsOn24And40And80GiBAreWhatReplaysThereDo) {
  // Real jobs scaled up so that some fit on each size and some do not.
  results::SweepPlan plan;
  const std::vector<std::pair<std::string, uint64_t>> jobs = {
      {"gpt2_train.default", 3},  {"gpt2_train.default", 4},     {"gpt2_train.default", 6},
      {"gpt2_train.default", 11}, {"resnet50_train.default", 8}, {"vit_infer_varbatch.default", 30}};
  for (const auto& [name, factor] : jobs) {
    const std::string scaled = path(name + ".x" + std::to_string(factor) + ".mrt");
    bench::write_scaled_copy(testing::imported_trace(name), scaled, {factor, 1000});
    plan.traces.push_back(scaled);
  }
  plan.policies = {"pytorch", "pytorch:expandable_segments:True"};
  plan.capacities = {SweepCapacity::fit(), SweepCapacity::at(uint64_t{40} << 30)};
  results::SweepSettings coarse;
  coarse.fit.grid_points = 8;
  coarse.fit.resolution_bytes = 64 << 20;
  const auto summary = results::summarize_sweep({sweep(plan, "scaled.jsonl", coarse)});
  ASSERT_EQ(summary.traces.size(), jobs.size());
  EXPECT_EQ(summary.totals.error_tasks, 0u);
  const auto claimed = check_fits_by_replay(summary);
  EXPECT_GT(claimed.at(Fits::yes), 0);
  EXPECT_GT(claimed.at(Fits::no), 0);
  // Every size splits the fleet: some jobs fit, some do not.
  for (size_t g = 0; g < 3; ++g) {
    EXPECT_GT(summary.totals.fit_current[g], 0u) << g;
    EXPECT_LT(summary.totals.fit_current[g], jobs.size()) << g;
  }
}

TEST_F(SweepSummaryTest, WhereFittingIsNotMonotonicOnlySureVerdictsAreGiven) {
  const std::string vit = testing::imported_trace("vit_infer_varbatch.default");
  const nlohmann::json fit = results::sweep_task_result({vit, "vit", "pytorch", SweepCapacity::fit()})["fit"];
  ASSERT_FALSE(fit["monotonic"].get<bool>());
  const uint64_t min_fit = fit["min_fit_bytes"], fail = fit["max_fail_bytes"], above = fit["fits_above_bytes"];
  results::SweepPlan plan;
  plan.traces = {vit};
  plan.policies = {"pytorch"};
  plan.capacities = {SweepCapacity::fit()};
  results::SummaryOptions options;
  options.gpu_bytes = {min_fit - (1 << 20), min_fit, (min_fit + fail) / 2, fail, above - 1, above, above + (8 << 20)};
  const auto summary = results::summarize_sweep({sweep(plan, "vit.jsonl")}, options);
  const auto claimed = check_fits_by_replay(summary);
  EXPECT_GT(claimed.at(Fits::yes), 0);
  EXPECT_GT(claimed.at(Fits::no), 0);
  const auto& fits = summary.traces[0].policies[0].fits;
  EXPECT_EQ(fits[1], Fits::yes);  // tested by the search
  EXPECT_EQ(fits[3], Fits::no);
  EXPECT_EQ(fits[2], Fits::unknown);  // inside the gap, not tested
}

TEST_F(SweepSummaryTest, ShardsMergeToTheWholeSweepAndRepeatsCountOnce) {
  results::SweepPlan plan;
  for (const auto& [name, trace] : testing::real_traces()) plan.traces.push_back(trace);
  plan.traces.push_back(path("missing.mrt"));
  plan.policies = {"pytorch", "memreplay"};
  plan.capacities = {SweepCapacity{}, SweepCapacity::at(uint64_t{2} << 30)};
  const std::string whole = sweep(plan, "whole.jsonl");
  std::vector<std::string> shards;
  for (uint64_t i = 0; i < 3; ++i) {
    plan.shard = {i, 3};
    shards.push_back(sweep(plan, "shard" + std::to_string(i) + ".jsonl"));
  }
  const auto expected = results::summary_json(results::summarize_sweep({whole}));
  EXPECT_EQ(results::summary_json(results::summarize_sweep(shards)), expected);
  EXPECT_EQ(expected["totals"]["error_tasks"], 4);
  EXPECT_EQ(expected["totals"]["tasks"], 40);
  auto twice = results::summary_json(results::summarize_sweep({whole, shards[1], whole}));
  EXPECT_EQ(twice["totals"]["duplicate_lines"], 40 + testing::read_json_lines(shards[1]).size());
  twice["totals"]["duplicate_lines"] = 0;
  EXPECT_EQ(twice, expected);
}

TEST(BestSetting, LowestReservedWithinTheDeviceCallFactor) {
  using results::SettingOutcome;
  const std::vector<SettingOutcome> s = {{100, 10, false}, {80, 30, false}, {90, 20, false}, {50, 5, true}};
  EXPECT_EQ(results::best_setting(s, 0, 2.0), 2u);  // 80 makes 3x the calls; 50 ran out of memory
  EXPECT_EQ(results::best_setting(s, 0, 3.0), 1u);
  EXPECT_EQ(results::best_setting(s, 0, 1.0), 0u);  // nothing better within the calls: stay
  EXPECT_EQ(results::best_setting(s, 0), 1u);  // the default allows 4x
  const std::vector<SettingOutcome> tie = {{100, 10, false}, {100, 10, false}, {100, 8, false}};
  EXPECT_EQ(results::best_setting(tie, 1), 2u);  // a tie goes to fewer calls,
  EXPECT_EQ(results::best_setting(std::vector<SettingOutcome>(tie.begin(), tie.begin() + 2), 1), 1u);  // then stays
  const std::vector<SettingOutcome> no_calls = {{100, 0, false}, {90, 5, false}, {95, 1, false}};
  EXPECT_EQ(results::best_setting(no_calls, 0, 2.0), 2u);  // none now: the factor times one call
  const std::vector<SettingOutcome> all_fail = {{100, 10, true}, {90, 10, true}};
  EXPECT_EQ(results::best_setting(all_fail, 0), std::nullopt);
}

}  // namespace
}  // namespace memreplay
