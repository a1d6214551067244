// A sweep on several threads: one line per task whatever the thread count, the lines those of
// the tasks run one by one; resuming skips what the output holds, cuts a torn last line, and
// refuses an output it would corrupt.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "proto/input_error.h"
#include "results/sweep.h"
#include "results/sweep_output.h"
#include "tests/support/sweep_lines.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

using results::SweepCapacity;

class SweepRun : public testing::TempDirTest {
 protected:
  static results::SweepPlan plan() {
    results::SweepPlan plan;
    for (const auto& [name, trace] : testing::real_traces()) plan.traces.push_back(trace);
    plan.traces.push_back("/no/such/trace.mrt");
    plan.policies = {"pytorch", "pytorch:expandable_segments:True", "memreplay"};
    plan.capacities = {SweepCapacity{}, SweepCapacity::at(uint64_t{2} << 30)};
    return plan;
  }
  results::SweepOutcome run(const std::string& output, unsigned jobs, bool resume = false) {
    results::SweepRunOptions options;
    options.output = output;
    options.jobs = jobs;
    options.resume = resume;
    return results::run_sweep(plan(), options);
  }
};

TEST_F(SweepRun, EveryTaskOnceWhateverTheThreadCount) {
  const auto one = run(path("one.jsonl"), 1);
  const auto two = run(path("two.jsonl"), 2);
  const size_t tasks = 10 * 3 * 2;
  EXPECT_EQ(one.progress.total, tasks);
  EXPECT_EQ(one.progress.done, tasks);
  EXPECT_EQ(one.progress.failed, 3u * 2);  // the missing trace's tasks
  EXPECT_EQ(two.progress.done, tasks);
  const auto by_one = testing::lines_by_key(testing::read_json_lines(path("one.jsonl")));
  const auto by_two = testing::lines_by_key(testing::read_json_lines(path("two.jsonl")));
  EXPECT_EQ(by_one.size(), tasks);
  EXPECT_EQ(by_one, by_two);
  // Each line is what the task gives run alone.
  for (const auto& [key, line] : by_two) {
    const results::SweepTask task{line["trace"], line["name"], line["policy"],
                                  results::capacity_from_json(line["capacity"])};
    EXPECT_EQ(testing::without_run_time(results::sweep_task_result(task)), line) << key;
  }
}

// Fit tasks on more threads than tasks: the grids' replays are shared among the idle threads, and
// every line is still the one the task gives run alone.
TEST_F(SweepRun, FitTasksWhoseGridsIdleThreadsShareGiveTheLinesOfTasksRunAlone) {
  results::SweepPlan plan;
  plan.traces = {testing::imported_trace("multistream_pipeline.default"),
                 testing::imported_trace("gpt2_train.truncated")};
  plan.policies = {"pytorch", "memreplay"};
  plan.capacities = {SweepCapacity::fit()};
  results::SweepRunOptions options;
  options.output = path("fit.jsonl");
  options.jobs = 6;
  EXPECT_EQ(results::run_sweep(plan, options).progress.done, 4u);
  const auto lines = testing::lines_by_key(testing::read_json_lines(path("fit.jsonl")));
  ASSERT_EQ(lines.size(), 4u);
  for (const auto& [key, line] : lines) {
    ASSERT_EQ(line["status"], "ok") << key;
    const results::SweepTask task{line["trace"], line["name"], line["policy"], SweepCapacity::fit()};
    EXPECT_EQ(testing::without_run_time(results::sweep_task_result(task)), line) << key;
  }
}

TEST_F(SweepRun, ResumeAfterATornLastLineWritesTheRestOnce) {
  run(path("whole.jsonl"), 2);
  const std::string whole = testing::read_bytes(path("whole.jsonl"));
  // A sweep killed mid-write: 17 whole lines and half of the 18th.
  size_t cut = 0;
  for (int line = 0; line < 17; ++line) cut = whole.find('\n', cut) + 1;
  const size_t torn = whole.find('\n', cut) - cut;
  std::ofstream(path("killed.jsonl"), std::ios::binary) << whole.substr(0, cut + torn / 2);

  const auto resumed = run(path("killed.jsonl"), 2, true);
  EXPECT_EQ(resumed.already_done, 17u);
  EXPECT_EQ(resumed.torn_bytes_cut, torn / 2);
  EXPECT_EQ(resumed.progress.done, 60u - 17);
  const auto lines = testing::read_json_lines(path("killed.jsonl"));
  EXPECT_EQ(lines.size(), 60u);
  for (const auto& [key, times] : testing::key_counts(lines)) EXPECT_EQ(times, 1) << key;
  EXPECT_EQ(testing::lines_by_key(lines), testing::lines_by_key(testing::read_json_lines(path("whole.jsonl"))));

  // Nothing left: a second resume runs nothing and writes nothing.
  const auto again = run(path("killed.jsonl"), 2, true);
  EXPECT_EQ(again.progress.total, 0u);
  EXPECT_EQ(again.already_done, 60u);
  EXPECT_EQ(testing::read_json_lines(path("killed.jsonl")).size(), 60u);
}

TEST_F(SweepRun, AnOutputWithResultsIsRefusedWithoutResume) {
  run(path("out.jsonl"), 2);
  const std::string error = testing::error_of<InputError>([&] { run(path("out.jsonl"), 2); });
  EXPECT_NE(error.find(path("out.jsonl") + ": the file holds results already; --resume"), std::string::npos) << error;
  EXPECT_NE(testing::error_of<InputError>([&] { run("-", 1, true); }).find("-o FILE"), std::string::npos);
}

TEST_F(SweepRun, AWholeLineThatIsNoResultStopsTheResumeNamingLineAndByte) {
  std::ofstream(path("bad.jsonl")) << R"({"name":"a","policy":"pytorch","capacity":null,"status":"ok"})"
                                   << "\n"
                                   << "garbage\n";
  const std::string error = testing::error_of<InputError>([&] { run(path("bad.jsonl"), 1, true); });
  EXPECT_NE(error.find(path("bad.jsonl") + ": line 2 (byte 62): not a sweep result line"), std::string::npos) << error;
}

TEST_F(SweepRun, ProgressCountsUpToTheTotalWithRateAndEta) {
  results::SweepRunOptions options;
  options.output = path("out.jsonl");
  options.jobs = 2;
  options.progress_interval_s = 0;
  std::vector<results::SweepProgress> seen;
  options.on_progress = [&](const results::SweepProgress& p) { seen.push_back(p); };
  results::run_sweep(plan(), options);
  ASSERT_GE(seen.size(), 60u);  // every task, then the end
  for (size_t i = 1; i < seen.size(); ++i) EXPECT_GE(seen[i].done, seen[i - 1].done);
  EXPECT_EQ(seen.back().done, 60u);
  EXPECT_EQ(seen.back().failed, 6u);
  EXPECT_EQ(results::progress_line({30, 2, 60, 10.0}), "sweep: 30/60 tasks (2 failed), 3.00 tasks/s, ETA 10s");
  EXPECT_EQ(results::progress_line({60, 0, 60, 125.0}), "sweep: 60/60 tasks, 0.48 tasks/s, 2m5s");
  EXPECT_EQ(results::progress_line({0, 0, 60, 0.0}), "sweep: 0/60 tasks");
}

TEST_F(SweepRun, LinesAreAppendedWholeFromManyThreads) {
  results::ResultLines out(path("lines.jsonl"));
  std::vector<std::thread> writers;
  const std::string long_line(100000, 'x');
  for (int t = 0; t < 4; ++t)
    writers.emplace_back([&] {
      for (int i = 0; i < 50; ++i) out.write(long_line);
    });
  for (auto& w : writers) w.join();
  std::ifstream in(path("lines.jsonl"));
  int lines = 0;
  for (std::string line; std::getline(in, line); ++lines) ASSERT_EQ(line, long_line);
  EXPECT_EQ(lines, 200);
}

}  // namespace
}  // namespace memreplay
