// The rules of one check case (results/check.h), then the verdicts of whole checks on every real
// trace held against their own replays: a baseline moved just inside a tolerance passes, just
// outside fails on exactly that metric.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "replayer/replay_runner.h"
#include "results/check.h"
#include "results/check_run.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

namespace fs = std::filesystem;
using results::CaseInput;
using results::evaluate_case;
using results::Finding;

results::MetricValues values(double requested, double reserved) {
  return {{"requested_peak", requested},
          {"reserved_peak", reserved},
          {"overhead", reserved / requested},
          {"unallocated_at_peak", 0.1},
          {"free_fragmentation_at_peak", 0.2},
          {"device_calls", 10},
          {"events", 1000},
          {"oom", 0}};
}

const Finding* finding(const results::CheckCase& c, const std::string& metric, const std::string& source) {
  for (const auto& f : c.findings)
    if (f.metric == metric && f.source == source) return &f;
  return nullptr;
}

TEST(CheckRules, CostsFailWhenTheyRiseAndTheJobsSizeWhenItFalls) {
  const results::BaselineEntry entry{"t", "p", values(1000, 1100)};
  // Reserved 5% up: past reserved_peak's 1%. Requested 20% down: past its 10%.
  auto c = evaluate_case({"t", "p", values(800, 1155), std::nullopt}, &entry, true, {}, {}, {});
  EXPECT_TRUE(finding(c, "reserved_peak", "baseline")->regression);
  const Finding* shrunk = finding(c, "requested_peak", "baseline");
  EXPECT_TRUE(shrunk->regression);
  EXPECT_DOUBLE_EQ(shrunk->limit, 900);
  EXPECT_NE(results::describe_finding(c, *shrunk).find("requested_peak 800 B < limit 900 B (baseline 1000 B)"),
            std::string::npos);
  // A larger job is not a regression of its own (its costs say whether the allocator got worse).
  c = evaluate_case({"t", "p", values(2000, 1100), std::nullopt}, &entry, true, {}, {}, {});
  EXPECT_FALSE(finding(c, "requested_peak", "baseline")->regression);
  // --allow-shrink lets the fall pass, and says so.
  c = evaluate_case({"t", "p", values(800, 1100), std::nullopt}, &entry, true, {}, {}, {false, true, false, false});
  EXPECT_FALSE(finding(c, "requested_peak", "baseline")->regression);
  EXPECT_NE(finding(c, "requested_peak", "baseline")->note.find("--allow-shrink"), std::string::npos);
}

TEST(CheckRules, ACaseWithoutAnEntryIsNewAndFailsUnlessAllowed) {
  auto c = evaluate_case({"t", "p", values(1000, 1100), std::nullopt}, nullptr, true, {}, {}, {});
  EXPECT_TRUE(c.is_new);
  EXPECT_TRUE(c.failed());
  EXPECT_EQ(c.status(), "new");
  c = evaluate_case({"t", "p", values(1000, 1100), std::nullopt}, nullptr, true, {}, {}, {true, false, false, false});
  EXPECT_FALSE(c.failed());
  // Without a baseline nothing is new.
  c = evaluate_case({"t", "p", values(1000, 1100), std::nullopt}, nullptr, false, {}, {{}, 2.0, false}, {});
  EXPECT_FALSE(c.is_new);
  EXPECT_FALSE(c.failed());
}

TEST(CheckRules, AnOomFailsEveryComparisonWhateverItsNumbers) {
  const results::BaselineEntry entry{"t", "p", values(1000, 1100)};
  results::MetricValues v = values(1000, 500);  // cut short: lower than the baseline everywhere it counts
  v["oom"] = 1;
  const auto c = evaluate_case({"t", "p", v, results::OomPoint{7, 4096}}, &entry, true, {}, {1u << 30, 5.0, false}, {});
  ASSERT_FALSE(c.findings.empty());
  for (const auto& f : c.findings) EXPECT_TRUE(f.regression) << f.metric << " " << f.source;
  EXPECT_NE(results::describe_finding(c, *finding(c, "reserved_peak", "--max-reserved"))
                .find("the replay ran out of memory at event 7 (4.00 KiB requested)"),
            std::string::npos);
  // Without a baseline or --capacity, the OOM is still named.
  const auto plain = evaluate_case({"t", "p", v, results::OomPoint{7, 4096}}, nullptr, false, {}, {{}, 5.0, false}, {});
  ASSERT_NE(finding(plain, "oom", "replay"), nullptr);
  EXPECT_TRUE(plain.failed());
}

TEST(CheckRules, ATraceThatRequestedNothingFailsUnlessAllowed) {
  results::MetricValues v = values(1, 0);
  v["requested_peak"] = 0;
  v["overhead"] = 1;
  auto c = evaluate_case({"t", "p", v, std::nullopt}, nullptr, false, {}, {{}, 2.0, false}, {});
  EXPECT_TRUE(c.failed());
  EXPECT_NE(finding(c, "requested_peak", "trace"), nullptr);
  c = evaluate_case({"t", "p", v, std::nullopt}, nullptr, false, {}, {{}, 2.0, false}, {false, false, true, false});
  EXPECT_FALSE(c.failed());
}

// A baseline whose every metric is better than `truth` by `scale` tolerances (the tolerance a
// metric has by default), where that keeps it a valid baseline value.
results::MetricValues moved_baseline(const results::MetricValues& truth, double scale) {
  results::MetricValues moved = truth;
  for (const auto& metric : results::check_metrics()) {
    const std::string key(metric.name);
    if (!truth.count(key) || key == "oom") continue;
    const double step = metric.absolute_tolerance ? metric.default_tolerance : truth.at(key) * metric.default_tolerance;
    const double value = truth.at(key) + (metric.worse == results::Worse::higher ? -1 : 1) * scale * step;
    if (value > 0) moved[key] = value;
  }
  return moved;
}

// Every real trace, against its own replay: a baseline half a tolerance better on every metric
// passes; twice a tolerance better fails on exactly the metrics moved, in the direction that is
// worse for each.
TEST(CheckVerdicts, MatchTheReplaysOfEveryRealTrace) {
  const auto names = testing::real_data_names("traces", ".pickle.xz");
  ASSERT_GE(names.size(), 5u) << testing::real_data_path("traces");
  const auto dir = fs::temp_directory_path() / ("memreplay_verdicts_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (const auto& name : names) {
    ReplayOptions o;
    o.trace_path = testing::imported_trace(name);
    const auto truth = results::metric_values(run_replay(o), std::nullopt);
    for (const double scale : {0.5, 2.0}) {
      results::Baseline b;
      const auto moved = moved_baseline(truth, scale);
      b.entries.push_back({name, "pytorch", moved});
      const std::string baseline = (dir / (name + ".json")).string();
      std::ofstream(baseline) << results::baseline_text(b);
      results::CheckRequest r;
      r.traces = {{o.trace_path, name}};
      r.policies = {"pytorch"};
      r.baseline = baseline;
      const auto result = results::run_check(r);
      ASSERT_EQ(result.cases.size(), 1u);
      EXPECT_EQ(result.cases[0].values, truth) << name;  // the check's replay is the replay
      size_t compared = 0;
      for (const auto& f : result.cases[0].findings) {
        ASSERT_EQ(f.source, "baseline");
        ++compared;
        const bool was_moved = moved.at(f.metric) != truth.at(f.metric);
        EXPECT_EQ(f.regression, scale > 1 && was_moved) << name << " x" << scale << ": " << f.metric;
      }
      EXPECT_EQ(compared, truth.size()) << name;
      EXPECT_EQ(result.passed(), scale < 1) << name;
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace memreplay
