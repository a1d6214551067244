// `memreplay sweep` and `sweep-summary` as a script runs them: each line is what `replay --json`
// (or `fit --json`) says for the same task, a sweep killed with SIGKILL resumes without writing a
// task twice or missing one, bad traces are error lines, bad input is one line and exit 2.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "tests/support/cli_run.h"
#include "tests/support/sweep_lines.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

using testing::run_shell;

class SweepCli : public testing::CliTest {
 protected:
  nlohmann::json json_of(const std::string& arguments) {
    const auto r = run(arguments);
    EXPECT_LE(r.status, 1) << arguments << "\n" << r.err;
    return nlohmann::json::parse(r.out);
  }
  std::string real_trace_arguments() {
    std::string out;
    for (const auto& [name, trace] : testing::real_traces()) out += " " + trace;
    return out;
  }
};

nlohmann::json replay_part(nlohmann::json line) {
  for (const char* key : {"name", "trace", "status", "fit"}) line.erase(key);
  return testing::without_run_time(line);
}

TEST_F(SweepCli, EachLineIsWhatReplayJsonSaysForTheSameTask) {
  const std::string trace = testing::imported_trace("gpt2_train.default");
  const auto sweep = run("sweep " + trace +
                         " --policy pytorch --policy pytorch:expandable_segments:True --policy gmlake"
                         " --capacity none,7GiB --timeline -o " +
                         path("out.jsonl"));
  ASSERT_EQ(sweep.status, 0) << sweep.err;
  const auto lines = testing::read_json_lines(path("out.jsonl"));
  ASSERT_EQ(lines.size(), 6u);
  for (const auto& line : lines) {
    EXPECT_EQ(line["status"], "ok");
    std::string replay = "replay " + trace + " --policy " + line["policy"].get<std::string>() + " --json -";
    if (!line["capacity"].is_null()) replay += " --capacity " + std::to_string(line["capacity"].get<uint64_t>());
    EXPECT_EQ(replay_part(line), testing::without_run_time(json_of(replay))) << replay;
  }
}

TEST_F(SweepCli, FitLineIsWhatFitJsonSays) {
  const std::string trace = testing::imported_trace("resnet50_train.default");
  const auto sweep = run("sweep " + trace + " --policy pytorch --capacity fit --grid 16");
  ASSERT_EQ(sweep.status, 0) << sweep.err;
  const nlohmann::json line = nlohmann::json::parse(sweep.out);
  const nlohmann::json fit = json_of("fit " + trace + " --policy pytorch --grid 16 --json -");
  for (const char* key : {"min_fit_bytes", "fits_above_bytes", "max_fail_bytes", "monotonic", "replays", "probes"})
    EXPECT_EQ(line["fit"][key], fit[key]) << key;
  nlohmann::json uncapped = testing::without_run_time(fit["uncapped"]);
  uncapped["timeline"] = nlohmann::json::array();
  uncapped["capacity"] = "fit";
  EXPECT_EQ(replay_part(line), uncapped);
}

TEST_F(SweepCli, AKilledSweepResumesWithEveryTaskOnce) {
  const std::string out = path("out.jsonl");
  const std::string sweep =
      std::string(MEMREPLAY_CLI) + " sweep" + real_trace_arguments() +
      " --policy pytorch --policy memreplay --policy gmlake --capacity none,fit --grid 4 -j 2 -o " + out;
  // SIGKILL once a few lines are out: no handler runs, whatever was mid-write stays torn.
  const auto killed = run_shell("(" + sweep + " 2>/dev/null & pid=$!; i=0; while [ \"$(cat " + out +
                                " 2>/dev/null | wc -l)\" -lt 5 ] && [ $i -lt 6000 ]; do sleep 0.02; i=$((i+1)); done;"
                                " kill -9 $pid; wait $pid; echo status=$?)");
  ASSERT_NE(killed.out.find("status=137"), std::string::npos) << killed.out;
  const size_t before = testing::read_json_lines(out).size();
  ASSERT_LT(before, 54u);
  const auto resumed = run_shell(sweep + " --resume", dir_);
  ASSERT_EQ(resumed.status, 0) << resumed.err;
  EXPECT_NE(resumed.err.find("already in " + out), std::string::npos) << resumed.err;
  const auto counts = testing::key_counts(testing::read_json_lines(out));
  EXPECT_EQ(counts.size(), 9u * 3 * 2);
  for (const auto& [key, times] : counts) EXPECT_EQ(times, 1) << key;
  // And what it wrote is what a sweep that was never killed writes.
  const auto whole =
      run_shell(std::string(MEMREPLAY_CLI) + " sweep" + real_trace_arguments() +
                    " --policy pytorch --policy memreplay --policy gmlake --capacity none,fit --grid 4 -j 2 -o " +
                    path("whole.jsonl"),
                dir_);
  ASSERT_EQ(whole.status, 0) << whole.err;
  EXPECT_EQ(testing::lines_by_key(testing::read_json_lines(out)),
            testing::lines_by_key(testing::read_json_lines(path("whole.jsonl"))));
}

#ifdef MEMREPLAY_EXAMPLE_PLUGIN
TEST_F(SweepCli, AllIsEveryPolicyAPluginIncluded) {
  const std::string trace = testing::imported_trace("multistream_pipeline.default");
  const auto sweep = run("sweep " + trace + " --plugin " + MEMREPLAY_EXAMPLE_PLUGIN + " --policy all");
  ASSERT_EQ(sweep.status, 0) << sweep.err;
  std::set<std::string> policies;
  std::istringstream out(sweep.out);
  for (std::string line; std::getline(out, line);) policies.insert(nlohmann::json::parse(line)["policy"]);
  for (const char* policy : {"pytorch", "bfc", "gmlake", "memreplay", "example_exact_size"})
    EXPECT_TRUE(policies.count(policy)) << policy;
}
#endif

TEST_F(SweepCli, BadTracesAreErrorLinesAndTheSweepGoesOn) {
  std::ofstream(path("garbage.mrt")) << "garbage";
  const std::string good = testing::imported_trace("multistream_pipeline.default");
  const auto sweep = run("sweep " + good + " " + path("garbage.mrt") + " " + path("missing.mrt") +
                         " --policy pytorch --policy bfc -o " + path("out.jsonl"));
  EXPECT_EQ(sweep.status, 1) << sweep.err;
  EXPECT_NE(sweep.err.find("sweep: 6/6 tasks (4 failed)"), std::string::npos) << sweep.err;
  std::set<std::string> failed;
  for (const auto& line : testing::read_json_lines(path("out.jsonl"))) {
    if (line["status"] == "ok") continue;
    const std::string error = line["error"];
    EXPECT_EQ(error.rfind(line["trace"].get<std::string>() + ": ", 0), 0u) << error;
    failed.insert(line["trace"]);
  }
  EXPECT_EQ(failed, (std::set<std::string>{path("garbage.mrt"), path("missing.mrt")}));
}

TEST_F(SweepCli, BadInputIsOneLineAndExitTwo) {
  const std::string trace = testing::imported_trace("multistream_pipeline.default");
  std::ofstream(path("full.jsonl")) << "{}\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"sweep " + trace + " --shard 4/4", "--shard '4/4'"},
      {"sweep " + trace + " --policy nonesuch", "no policy named 'nonesuch'"},
      {"sweep " + trace + " --capacity lots", "--capacity 'lots'"},
      {"sweep '" + path("*.none") + "'", "no trace matches"},
      {"sweep --manifest " + path("missing.tsv"), "missing.tsv: cannot read the manifest"},
      {"sweep " + trace + " -o " + path("full.jsonl"), "full.jsonl: the file holds results already"},
      {"sweep " + trace + " --resume", "-o FILE"},
      {"sweep-summary " + path("full.jsonl"), "full.jsonl: line 1 (byte 0): not a sweep result line"},
  };
  for (const auto& [arguments, message] : cases) {
    const auto r = run(arguments);
    EXPECT_EQ(r.status, 2) << arguments << "\n" << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << arguments << "\n" << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

TEST_F(SweepCli, SummaryAsTableCsvMarkdownAndJson) {
  const auto sweep = run("sweep" + real_trace_arguments() + " " + path("missing.mrt") +
                         " --policy pytorch --policy pytorch:expandable_segments:True -o " + path("out.jsonl"));
  ASSERT_EQ(sweep.status, 1) << sweep.err;
  const auto table = run("sweep-summary " + path("out.jsonl"));
  ASSERT_EQ(table.status, 0) << table.err;
  EXPECT_NE(table.out.find("best setting"), std::string::npos);
  EXPECT_NE(table.out.find("10 traces, 20 tasks (2 failed"), std::string::npos) << table.out;
  const auto csv = run("sweep-summary " + path("out.jsonl") + " --csv");
  ASSERT_EQ(csv.status, 0);
  EXPECT_EQ(csv.out.rfind("name,trace,current_policy,", 0), 0u) << csv.out;
  EXPECT_EQ(std::count(csv.out.begin(), csv.out.end(), '\n'), 11) << csv.out;
  const auto markdown = run("sweep-summary " + path("out.jsonl") + " --markdown");
  EXPECT_EQ(markdown.out.rfind("| trace | pytorch reserved | best setting |", 0), 0u) << markdown.out;
  ASSERT_EQ(run("sweep-summary " + path("out.jsonl") + " --csv " + path("s.csv") + " --markdown " + path("s.md") +
                " --json " + path("s.json"))
                .status,
            0);
  EXPECT_EQ(testing::slurp(path("s.csv")), csv.out);
  EXPECT_EQ(testing::slurp(path("s.md")), markdown.out);
  const auto summary = testing::read_json(path("s.json"));
  EXPECT_EQ(summary["schema"], "memreplay-sweep-summary");
  EXPECT_EQ(summary["traces"].size(), 10u);
}

}  // namespace
}  // namespace memreplay
