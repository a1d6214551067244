// One sweep task: its line holds exactly what `replay --json` holds for the same replay (a fit
// task: the uncapped replay and the search's outcome), and a task that cannot run is an error
// line naming the trace, never an exception.
#include <gtest/gtest.h>

#include <fstream>

#include "replayer/replay_runner.h"
#include "results/fit_scan.h"
#include "results/sweep_task.h"
#include "tests/support/sweep_lines.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

using results::SweepCapacity;
using results::SweepTask;

// The line's replay fields: the task's own (name, trace, status, the "fit" outcome) left out.
nlohmann::json replay_part(nlohmann::json line) {
  for (const char* key : {"name", "trace", "status", "fit"}) line.erase(key);
  return testing::without_run_time(line);
}

nlohmann::json replay_json(const std::string& trace, const std::string& policy, std::optional<uint64_t> capacity) {
  ReplayOptions options;
  options.trace_path = trace;
  options.policy_spec = policy;
  options.capacity = capacity;
  return testing::without_run_time(to_json(run_replay(options)));
}

TEST(SweepTask, LineHoldsTheReplaysFieldsForEveryPolicy) {
  const std::string trace = testing::imported_trace("gpt2_train.default");
  results::SweepSettings with_timeline;
  with_timeline.timeline = true;
  for (const auto& policy : {"pytorch", "pytorch:expandable_segments:True", "bfc", "gmlake", "memreplay", "cuda_async",
                             "rmm_pool", "buddy", "passthrough"})
    for (const std::optional<uint64_t> capacity : {std::optional<uint64_t>{}, std::optional<uint64_t>{6ull << 30}}) {
      const SweepTask task{trace, "gpt2", policy, capacity ? SweepCapacity::at(*capacity) : SweepCapacity{}};
      const nlohmann::json line = results::sweep_task_result(task, with_timeline);
      EXPECT_EQ(line["status"], "ok") << line.dump();
      EXPECT_EQ(line["name"], "gpt2");
      EXPECT_EQ(line["trace"], trace);
      EXPECT_EQ(replay_part(line), replay_json(trace, policy, capacity)) << policy;
    }
}

TEST(SweepTask, WithoutTimelineOnlyTheTimelineIsEmpty) {
  const std::string trace = testing::imported_trace("resnet50_train.default");
  const nlohmann::json line = results::sweep_task_result({trace, "r", "pytorch", {}});
  nlohmann::json expected = replay_json(trace, "pytorch", std::nullopt);
  EXPECT_FALSE(expected["timeline"].empty());
  expected["timeline"] = nlohmann::json::array();
  EXPECT_EQ(replay_part(line), expected);
  EXPECT_LT(results::run_sweep_task({trace, "r", "pytorch", {}}).size(), 4000u);
}

TEST(SweepTask, FitTaskIsTheSearchAndItsUncappedReplay) {
  const std::string trace = testing::imported_trace("vit_infer_varbatch.default");  // not monotonic
  const nlohmann::json line = results::sweep_task_result({trace, "vit", "pytorch", SweepCapacity::fit()});
  ASSERT_EQ(line["status"], "ok") << line.dump();
  EXPECT_EQ(line["capacity"], "fit");
  ReplayOptions options;
  options.trace_path = trace;
  const results::FitScan scan = results::scan_min_capacity(options);  // `fit`'s defaults
  EXPECT_EQ(line["fit"]["min_fit_bytes"], scan.smallest_fit_bytes);
  EXPECT_EQ(line["fit"]["fits_above_bytes"], scan.fits_above_bytes);
  EXPECT_EQ(line["fit"]["max_fail_bytes"], scan.largest_fail_bytes);
  EXPECT_EQ(line["fit"]["monotonic"], false);
  EXPECT_EQ(line["fit"]["probes"].size(), scan.probes.size());
  nlohmann::json uncapped = replay_json(trace, "pytorch", std::nullopt);
  uncapped["timeline"] = nlohmann::json::array();
  uncapped["capacity"] = "fit";
  EXPECT_EQ(replay_part(line), uncapped);
}

class SweepTaskErrors : public testing::TempDirTest {};

TEST_F(SweepTaskErrors, BadTracesAndOptionsBecomeErrorLinesNamingTheTrace) {
  const std::string missing = path("missing.mrt");
  const std::string garbage = path("garbage.mrt");
  std::ofstream(garbage) << "not a trace at all, just text";
  const std::string cut = path("cut.mrt");
  {
    const std::string whole = testing::read_bytes(testing::imported_trace("multistream_pipeline.default"));
    std::string damaged = whole;
    damaged[whole.size() / 2] ^= 0x5a;  // a record in the middle fails its CRC
    std::ofstream(cut, std::ios::binary) << damaged;
  }
  const std::string good = testing::imported_trace("multistream_pipeline.default");
  const std::vector<std::pair<SweepTask, std::string>> cases = {
      {{missing, "m", "pytorch", {}}, missing + ": "},
      {{garbage, "g", "pytorch", SweepCapacity::fit()}, garbage + ": "},
      {{cut, "c", "pytorch", {}}, cut + ": byte "},
      {{good, "o", "pytorch:no_such_option:1", {}}, good + ": "},
  };
  for (const auto& [task, prefix] : cases) {
    const nlohmann::json line = results::sweep_task_result(task);
    EXPECT_EQ(line["status"], "error") << line.dump();
    EXPECT_EQ(line["name"], task.name);
    EXPECT_EQ(line["policy"], task.policy);
    const std::string error = line["error"];
    EXPECT_EQ(error.rfind(prefix, 0), 0u) << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
    EXPECT_EQ(results::task_key_of_line(line), results::task_key(task));
  }
}

}  // namespace
}  // namespace memreplay
