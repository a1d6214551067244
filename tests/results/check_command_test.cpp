// memreplay check, the CI gate, on real traces: a baseline it passes, a regression it names, the
// bad inputs it refuses (exit 2, one line, no output file left).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/support/cli_run.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

namespace fs = std::filesystem;
using testing::run_memreplay;
using testing::slurp;

class CheckCommand : public testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    trace_ = path("gpt2_train.mrt");
    fs::copy_file(testing::imported_trace("gpt2_train.default"), trace_);
    baseline_ = path("baseline.json");
  }
  testing::CliRun run(const std::string& arguments) { return run_memreplay(arguments, dir_); }
  nlohmann::json baseline() { return nlohmann::json::parse(slurp(baseline_)); }
  void write_baseline(const nlohmann::json& j) { std::ofstream(baseline_) << j.dump(2); }
  std::string trace_, baseline_;
};

TEST_F(CheckCommand, PassesAgainstTheBaselineItWroteAndFailsWhenTheTraceGetsWorse) {
  auto r = run("check " + trace_ + " --policy pytorch --policy pytorch:expandable_segments:True --baseline " +
               baseline_ + " --update-baseline");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto written = baseline();
  ASSERT_EQ(written["entries"].size(), 2u);
  EXPECT_EQ(written["entries"][0]["trace"], "gpt2_train");
  // groundtruth/replay/gpt2_train.default.default: PyTorch's own reserved peak.
  EXPECT_EQ(written["entries"][0]["metrics"]["reserved_peak"], 8082423808.0);

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
  EXPECT_NE(r.err.find("ran out of memory under --capacity"), std::string::npos) << r.err;
}

TEST_F(CheckCommand, RefusesBadInputWithOneLineAndExit2) {
  ASSERT_EQ(run("check " + trace_ + " --policy pytorch --baseline " + baseline_ + " --update-baseline").status, 0);
  const auto one_line = [](const testing::CliRun& r) { return r.err.find('\n') == r.err.size() - 1; };

  auto r = run("check " + trace_ + " --policy pytorch:max_split_size_mb:64 --baseline " + baseline_);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("no entry for trace 'gpt2_train' with policy 'pytorch:max_split_size_mb:64'"), std::string::npos)
      << r.err;
  EXPECT_TRUE(one_line(r)) << r.err;

  r = run("check " + trace_ + " --policy pytorch --baseline " + baseline_ + " --tolerance reserved=1%");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("unknown metric 'reserved'"), std::string::npos) << r.err;

  auto other = baseline();
  other["schema_version"] = 99;
  write_baseline(other);
  r = run("check " + trace_ + " --policy pytorch --baseline " + baseline_ + " --junit " + path("j.xml"));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("baseline schema version 99"), std::string::npos) << r.err;
  EXPECT_TRUE(one_line(r)) << r.err;
  EXPECT_FALSE(fs::exists(path("j.xml")));

  // A trace cut off before its footer: its numbers would be partial.
  const std::string cut = path("cut.mrt");
  fs::copy_file(trace_, cut);
  fs::resize_file(cut, fs::file_size(cut) - 40);
  r = run("check " + cut + " --policy pytorch --max-overhead 2 --junit " + path("j.xml"));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("the trace is incomplete"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(path("j.xml")));
  EXPECT_EQ(run("check " + cut + " --policy pytorch --max-overhead 2 --allow-incomplete").status, 0);

  EXPECT_EQ(run("check " + trace_ + " --policy pytorch").status, 2);  // nothing to check against
}

}  // namespace
}  // namespace memreplay
