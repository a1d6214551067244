// memreplay check, the CI gate, on real traces: a baseline it passes, a regression it names, the
// bad inputs it refuses (exit 2, one line, the error in the JUnit report), a replay that ran out
// of memory failing every limit.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "replayer/replay_runner.h"
#include "tests/support/check_fixture.h"
#include "tests/support/cli_run.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

namespace fs = std::filesystem;
using testing::slurp;

using CheckCommand = testing::CheckBaselineTest;

TEST_F(CheckCommand, PassesAgainstTheBaselineItWroteAndFailsWhenTheTraceGetsWorse) {
  auto r = run("check " + trace_ + " --policy pytorch --policy pytorch:expandable_segments:True --baseline " +
               baseline_ + " --update-baseline");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto written = baseline();
  ASSERT_EQ(written["entries"].size(), 2u);
  EXPECT_EQ(written["entries"][0]["trace"], "gpt2_train");
  // groundtruth/replay/gpt2_train.default.default: PyTorch's own reserved peak.
  EXPECT_EQ(written["entries"][0]["metrics"]["reserved_peak"], 8082423808.0);
  EXPECT_EQ(written["schema_version"], 2);
  EXPECT_GT(written["entries"][0]["metrics"]["requested_peak"].get<double>(), 7e9);
  EXPECT_GT(written["entries"][0]["metrics"]["events"].get<double>(), 0);

  r = run("check " + trace_ + " --policy pytorch --policy pytorch:expandable_segments:True --baseline " + baseline_ +
          " --junit " + path("check.xml") + " --markdown " + path("check.md"));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(slurp(path("check.xml")).find("failures=\"0\""), std::string::npos);
  EXPECT_NE(slurp(path("check.md")).find("passed"), std::string::npos);

  // Last week's numbers were 10% lower: this run is a regression, named with baseline, value and limit.
  auto lower = written;
  lower["entries"][0]["metrics"]["reserved_peak"] = 8082423808.0 / 1.1;
  write_baseline(lower);
  r = run("check " + trace_ + " --policy pytorch --policy pytorch:expandable_segments:True --baseline " + baseline_ +
          " --junit " + path("check.xml") + " --markdown " + path("check.md") + " --json " + path("check.json"));
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find("REGRESSION gpt2_train pytorch: reserved_peak 7.53 GiB > limit 6.91 GiB (baseline 6.84 GiB)"),
            std::string::npos)
      << r.err;
  const std::string junit = slurp(path("check.xml"));
  EXPECT_NE(junit.find("failures=\"1\""), std::string::npos) << junit;
  EXPECT_NE(junit.find("<failure"), std::string::npos);
  EXPECT_NE(slurp(path("check.md")).find("FAILED"), std::string::npos);
  const auto result = nlohmann::json::parse(slurp(path("check.json")));
  EXPECT_FALSE(result["passed"].get<bool>());
  EXPECT_EQ(result["failed_cases"], 1);

  // A tolerance wide enough lets it pass again.
  r = run("check " + trace_ + " --policy pytorch --baseline " + baseline_ + " --tolerance reserved_peak=15%");
  EXPECT_EQ(r.status, 0) << r.err;
}

TEST_F(CheckCommand, PlainLimitsWithoutABaseline) {
  EXPECT_EQ(run("check " + trace_ + " --policy pytorch --max-reserved 8GiB --max-overhead 1.10").status, 0);
  auto r = run("check " + trace_ + " --policy pytorch --max-reserved 7GiB");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("reserved_peak 7.53 GiB > limit 7.00 GiB (--max-reserved)"), std::string::npos) << r.err;
  // gpt2_train's requested peak is 7.17 GiB: 6 GiB cannot fit.
  r = run("check " + trace_ + " --policy pytorch --capacity 6GiB");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("ran out of memory under --capacity at event "), std::string::npos) << r.err;
}

// per_process_memory_fraction:0.0001 leaves the policy 14 MiB of the H200: the replay runs out of
// memory at its first allocation (147 MiB), so its reserved peak is 0 and --max-reserved 1MiB alone would pass it.
TEST_F(CheckCommand, AReplayThatRanOutOfMemoryFailsEveryLimit) {
  ReplayOptions brute;
  brute.trace_path = trace_;
  brute.policy_spec = "pytorch:per_process_memory_fraction:0.0001";
  const ReplayMetrics m = run_replay(brute);
  ASSERT_EQ(m.oom_at_event, 0u);
  ASSERT_LE(m.reserved_peak, 1u << 20);

  auto r = run("check " + trace_ + " --policy pytorch:per_process_memory_fraction:0.0001 --max-reserved 1MiB --json " +
               path("r.json"));
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find("ran out of memory at event 0"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("reserved_peak 0 B <= limit 1.00 MiB (--max-reserved): the replay ran out of memory"),
            std::string::npos)
      << r.err;
  const auto result = nlohmann::json::parse(slurp(path("r.json")));
  EXPECT_EQ(result["cases"][0]["status"], "failed");
  EXPECT_EQ(result["cases"][0]["oom"]["event"], 0);
  for (const auto& f : result["cases"][0]["findings"]) EXPECT_TRUE(f["regression"].get<bool>()) << f.dump();

  // Against a baseline: the OOM fails it as well, and an update refuses to record it.
  ASSERT_EQ(run("check " + trace_ + " --policy pytorch --baseline " + baseline_ + " --update-baseline").status, 0);
  auto entry = baseline();
  entry["entries"][0]["policy"] = "pytorch:per_process_memory_fraction:0.0001";
  write_baseline(entry);
  r = run("check " + trace_ + " --policy pytorch:per_process_memory_fraction:0.0001 --baseline " + baseline_);
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find("ran out of memory (baseline: fitted) at event 0"), std::string::npos) << r.err;
  r = run("check " + trace_ + " --policy pytorch:per_process_memory_fraction:0.0001 --baseline " + baseline_ +
          " --update-baseline --accept");
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.out.find("baseline NOT updated: 1 case(s) failed their limits"), std::string::npos) << r.out;
  EXPECT_EQ(baseline(), entry);
}

TEST_F(CheckCommand, RefusesBadInputWithOneLineAndExit2) {
  ASSERT_EQ(run("check " + trace_ + " --policy pytorch --baseline " + baseline_ + " --update-baseline").status, 0);
  const auto one_line = [](const testing::CliRun& r) { return r.err.find('\n') == r.err.size() - 1; };

  auto r = run("check " + trace_ + " --policy pytorch --baseline " + baseline_ + " --tolerance reserved=1%");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("unknown metric 'reserved'"), std::string::npos) << r.err;
  EXPECT_TRUE(one_line(r)) << r.err;

  auto other = baseline();
  other["schema_version"] = 99;
  write_baseline(other);
  r = run("check " + trace_ + " --policy pytorch --baseline " + baseline_ + " --junit " + path("j.xml"));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("baseline schema version 99"), std::string::npos) << r.err;
  EXPECT_TRUE(one_line(r)) << r.err;
  // The CI still gets its report: one failing case naming the error.
  EXPECT_NE(slurp(path("j.xml")).find("type=\"bad-input\""), std::string::npos) << slurp(path("j.xml"));
  EXPECT_NE(slurp(path("j.xml")).find("baseline schema version 99"), std::string::npos);

  // A trace cut off before its footer: its numbers would be partial.
  const std::string cut = path("cut.mrt");
  fs::copy_file(trace_, cut);
  fs::resize_file(cut, fs::file_size(cut) - 40);
  r = run("check " + cut + " --policy pytorch --max-overhead 2 --junit " + path("cut.xml"));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("the trace is incomplete"), std::string::npos) << r.err;
  EXPECT_NE(slurp(path("cut.xml")).find("the trace is incomplete"), std::string::npos);
  EXPECT_EQ(run("check " + cut + " --policy pytorch --max-overhead 2 --allow-incomplete").status, 0);

  EXPECT_EQ(run("check " + trace_ + " --policy pytorch").status, 2);  // nothing to check against
}

}  // namespace
}  // namespace memreplay
