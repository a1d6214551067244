// memreplay check as a nightly CI job uses it, on real traces: dated files keyed to one baseline
// entry (--name, NAME=PATH), cases new to the baseline, an empty recording, a baseline update
// that changes too much, --policy all with a plugin, and the reports written on every exit. Each
// verdict is held against a replay of what it claims.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "proto/trace_reader.h"
#include "proto/trace_writer.h"
#include "replayer/replay_runner.h"
#include "results/check_metrics.h"
#include "tests/support/check_fixture.h"
#include "tests/support/cli_run.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

namespace fs = std::filesystem;
using testing::slurp;

class CheckCi : public testing::CheckBaselineTest {
 protected:
  // The baseline of gpt2_train under pytorch, as an update writes it.
  void make_baseline(const std::string& name = "gpt2_train") {
    const auto r =
        run("check " + name + "=" + trace_ + " --policy pytorch --baseline " + baseline_ + " --update-baseline");
    ASSERT_EQ(r.status, 0) << r.err;
  }
  ReplayMetrics replay(const std::string& trace, const std::string& policy = "pytorch") {
    ReplayOptions o;
    o.trace_path = trace;
    o.policy_spec = policy;
    return run_replay(o);
  }
};

// A trace written by a recorder that saw no allocation: what `record -- /bin/ls` leaves.
std::string write_empty_trace(const std::string& path, const std::string& like) {
  TraceReader reader(like);
  TraceWriter writer(path);
  writer.begin(reader.header());
  writer.finish();
  return path;
}

TEST_F(CheckCi, AnEmptyRecordingFailsUnderARealTracesName) {
  make_baseline();
  const std::string empty = write_empty_trace(path("empty.mrt"), trace_);
  ASSERT_TRUE(TraceReader::read_all(empty).empty());  // nothing to replay: 0 B would pass every limit

  auto r = run("check gpt2_train=" + empty + " --policy pytorch --baseline " + baseline_ + " --junit " + path("j.xml"));
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find("REGRESSION gpt2_train pytorch: the trace requested no memory"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("requested_peak 0 B < limit"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("events 0 < limit"), std::string::npos) << r.err;
  EXPECT_NE(slurp(path("j.xml")).find("<failure"), std::string::npos);
  // Without a baseline too: a plain limit alone passes 0 B.
  EXPECT_EQ(run("check " + empty + " --policy pytorch --max-reserved 1GiB").status, 1);
  // Both rules have their flag; with them the zeros are within every other limit.
  r = run("check gpt2_train=" + empty + " --policy pytorch --baseline " + baseline_ + " --allow-empty --allow-shrink");
  EXPECT_EQ(r.status, 0) << r.err;
  // validate and replay refuse it as bad input: there is nothing in it to read.
  r = run("validate " + empty);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("empty.mrt: the trace holds no event"), std::string::npos) << r.err;
  EXPECT_EQ(run("replay " + empty).status, 2);
}

#if defined(MEMREPLAY_INTERPOSER_LIB)
TEST_F(CheckCi, RecordOfAProgramWithoutCudaIsAnEmptyTraceThatFails) {
  make_baseline();
  const std::string recorded = path("ls.mrt");
  const auto r = testing::run_memreplay(
      "record -q -o " + recorded + " --interposer " + std::string(MEMREPLAY_INTERPOSER_LIB) + " -- /bin/ls", dir_,
      "ASAN_OPTIONS=verify_asan_link_order=0");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto c = run("check gpt2_train=" + recorded + " --policy pytorch --baseline " + baseline_);
  EXPECT_EQ(c.status, 1) << c.err;
  EXPECT_NE(c.err.find("the trace requested no memory"), std::string::npos) << c.err;
}
#endif

TEST_F(CheckCi, ValidateAndReplayRefuseATraceCutOffBeforeItsFirstChunk) {
  std::string cut = path("cut.mrt");
  {
    TraceReader reader(trace_);
    ASSERT_NE(reader.footer(), nullptr);
    fs::copy_file(trace_, cut);
    fs::resize_file(cut, reader.footer()->chunks(0).offset() + 20);  // the first chunk torn
  }
  {
    TraceReader reader(cut);
    ASSERT_FALSE(reader.complete());
    ASSERT_EQ(reader.loss()->whole_events, 0u);
  }
  for (const std::string command : {"validate ", "replay "}) {
    const auto r = run(command + cut);
    EXPECT_EQ(r.status, 2) << command << r.out << r.err;
    EXPECT_NE(r.err.find("cut.mrt: no event to read: the file was cut off before its first whole chunk"),
              std::string::npos)
        << r.err;
  }
  const auto r = run("check " + cut + " --policy pytorch --max-overhead 2 --allow-incomplete");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("no event to check"), std::string::npos) << r.err;
}

TEST_F(CheckCi, DatedNightlyFilesMapToOneEntryByName) {
  make_baseline();
  fs::create_directories(path("2026-12-01"));
  const std::string nightly = path("2026-12-01/gpt2_train-2026-12-01.mrt");
  fs::copy_file(trace_, nightly);
  EXPECT_EQ(run("check " + nightly + " --name gpt2_train --policy pytorch --baseline " + baseline_).status, 0);
  EXPECT_EQ(run("check gpt2_train=" + nightly + " --policy pytorch --baseline " + baseline_).status, 0);
  // Unnamed, the dated file is a trace the baseline has never seen.
  auto r = run("check " + nightly + " --policy pytorch --baseline " + baseline_);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("NEW gpt2_train-2026-12-01 pytorch: no baseline entry"), std::string::npos) << r.err;

  // Two files of one base name: refused unnamed (they would share an entry), fine when named.
  fs::create_directories(path("a"));
  fs::create_directories(path("b"));
  fs::copy_file(trace_, path("a/run.mrt"));
  fs::copy_file(trace_, path("b/run.mrt"));
  r = run("check " + path("a/run.mrt") + " " + path("b/run.mrt") + " --policy pytorch --max-overhead 2");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("trace name 'run' is also that of"), std::string::npos) << r.err;
  r = run("check first=" + path("a/run.mrt") + " second=" + path("b/run.mrt") + " --policy pytorch --max-overhead 2");
  EXPECT_EQ(r.status, 0) << r.err;
  r = run("check " + path("a/run.mrt") + " " + path("b/run.mrt") + " --name first --name second --policy pytorch " +
          "--max-overhead 2 --json " + path("named.json"));
  EXPECT_EQ(r.status, 0) << r.err;
  const auto cases = nlohmann::json::parse(slurp(path("named.json")))["cases"];
  ASSERT_EQ(cases.size(), 2u);
  EXPECT_EQ(cases[0]["trace"], "first");
  EXPECT_EQ(cases[1]["trace"], "second");
  EXPECT_EQ(run("check " + path("a/run.mrt") + " --name x --name y --policy pytorch --max-overhead 2").status, 2);
}

TEST_F(CheckCi, ACaseNewToTheBaselineFailsUnlessAllowed) {
  make_baseline();
  const std::string added = "pytorch:expandable_segments:True";
  const nlohmann::json made = baseline();  // a named copy: the loop must not iterate a temporary's member
  for (const auto& e : made["entries"]) ASSERT_NE(e["policy"], added);  // truly new

  auto r = run("check " + trace_ + " --policy pytorch --policy " + added + " --baseline " + baseline_ + " --json " +
               path("r.json") + " --markdown " + path("r.md"));
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find("NEW gpt2_train " + added + ": no baseline entry (--allow-new to pass it"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("REGRESSION"), std::string::npos) << r.err;  // new is not a regression
  auto cases = nlohmann::json::parse(slurp(path("r.json")))["cases"];
  EXPECT_EQ(cases[0]["status"], "passed");
  EXPECT_EQ(cases[1]["status"], "new");
  EXPECT_FALSE(cases[1]["passed"].get<bool>());
  EXPECT_NE(slurp(path("r.md")).find("**New** (no baseline entry)"), std::string::npos);

  r = run("check " + trace_ + " --policy pytorch --policy " + added + " --baseline " + baseline_ +
          " --allow-new --json " + path("r.json"));
  EXPECT_EQ(r.status, 0) << r.err;
  cases = nlohmann::json::parse(slurp(path("r.json")))["cases"];
  EXPECT_EQ(cases[1]["status"], "new");
  EXPECT_TRUE(cases[1]["passed"].get<bool>());
  // Its plain limits still hold: the replay's own overhead, from a replay of its own.
  const ReplayMetrics m = replay(trace_, added);
  const double overhead = double(m.reserved_peak) / double(m.requested_peak);
  EXPECT_EQ(run("check " + trace_ + " --policy " + added + " --baseline " + baseline_ + " --allow-new " +
                "--max-overhead " + std::to_string(overhead * 0.99))
                .status,
            1);
}

TEST_F(CheckCi, AnUpdateBeyondTheTolerancesIsRefusedUnlessAccepted) {
  make_baseline();
  const ReplayMetrics m = replay(trace_);
  auto lower = baseline();
  lower["entries"][0]["metrics"]["reserved_peak"] = double(m.reserved_peak) / 1.1;
  write_baseline(lower);

  auto r = run("check " + trace_ + " --policy pytorch --baseline " + baseline_ + " --update-baseline --junit " +
               path("j.xml") + " --markdown " + path("m.md"));
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_THAT(r.out,
              ::testing::HasSubstr(
                  "CHANGED gpt2_train pytorch: reserved_peak 6.84 GiB -> 7.53 GiB (+10.0%), beyond its 1% tolerance"));
  EXPECT_NE(r.out.find("baseline NOT updated"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("baseline updated"), std::string::npos) << r.out;
  EXPECT_EQ(baseline(), lower);  // untouched
  EXPECT_NE(slurp(path("j.xml")).find("name=\"baseline update\""), std::string::npos);
  EXPECT_NE(slurp(path("m.md")).find("**Baseline update**: not written"), std::string::npos);

  // A fall as large is refused as well: a baseline moves by --accept only.
  auto higher = lower;
  higher["entries"][0]["metrics"]["reserved_peak"] = double(m.reserved_peak) * 1.1;
  write_baseline(higher);
  r = run("check " + trace_ + " --policy pytorch --baseline " + baseline_ + " --update-baseline");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("(-9.1%), beyond its 1% tolerance"), std::string::npos) << r.out;
  EXPECT_EQ(baseline(), higher);

  r = run("check " + trace_ + " --policy pytorch --baseline " + baseline_ + " --update-baseline --accept");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("; baseline updated"), std::string::npos) << r.out;
  EXPECT_EQ(baseline()["entries"][0]["metrics"]["reserved_peak"], double(m.reserved_peak));

  // Within the tolerance, an update needs no --accept and still says what moved.
  auto close = baseline();
  close["entries"][0]["metrics"]["reserved_peak"] = double(m.reserved_peak) * 1.005;
  write_baseline(close);
  r = run("check " + trace_ + " --policy pytorch --baseline " + baseline_ + " --update-baseline");
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("CHANGED gpt2_train pytorch: reserved_peak"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("beyond"), std::string::npos) << r.out;
  EXPECT_EQ(run("check " + trace_ + " --policy pytorch --baseline " + baseline_ + " --accept").status, 2);
}

// The bundled run with every allocation 25% larger: the model grew, the allocator did not get worse.
TEST_F(CheckCi, TheMarkdownTellsAGrownModelFromGrownFragmentation) {
  make_baseline();
  const std::string grown = testing::grown_trace(trace_, path("grown.mrt"));
  const auto r =
      run("check gpt2_train=" + grown + " --policy pytorch --baseline " + baseline_ + " --markdown " + path("m.md"));
  EXPECT_EQ(r.status, 1) << r.err;
  const std::string md = slurp(path("m.md"));
  const ReplayMetrics before = replay(trace_), after = replay(grown);
  const auto row = [&](const char* label, const char* metric, double b, double a) {
    return std::string("| ") + label + " | " + results::format_metric(metric, b) + " | " +
           results::format_metric(metric, a) + " | " + results::format_change(metric, b, a) + " |";
  };
  // The requested peak grew with the reserved peak: the job is larger, not more wasteful.
  EXPECT_NE(md.find(row("requested peak", "requested_peak", before.requested_peak, after.requested_peak)),
            std::string::npos)
      << md;
  EXPECT_NE(md.find(row("reserved peak", "reserved_peak", before.reserved_peak, after.reserved_peak)),
            std::string::npos)
      << md;
  EXPECT_GT(double(after.requested_peak), 1.2 * double(before.requested_peak));
  EXPECT_NE(md.find("| metric | baseline | new | change | limit |"), std::string::npos) << md;
}

TEST_F(CheckCi, PolicyAllChecksEveryRegisteredPolicyPluginsIncluded) {
#if defined(MEMREPLAY_EXAMPLE_PLUGIN)
  const std::string plugin = MEMREPLAY_EXAMPLE_PLUGIN;
  const auto listed = run("policies --plugin " + plugin + " --json");
  ASSERT_EQ(listed.status, 0) << listed.err;
  std::vector<std::string> expected;
  const auto policies = nlohmann::json::parse(listed.out)["policies"];
  for (const auto& p : policies) expected.push_back(p["name"]);
  ASSERT_NE(std::find(expected.begin(), expected.end(), "example_exact_size"), expected.end()) << listed.out;
  const std::string small = path("small.mrt");
  fs::copy_file(testing::imported_file(testing::source_dir() / "traces/multistream_pipeline.default.pickle.xz"), small);
  const auto r =
      run("check " + small + " --policy all --plugin " + plugin + " --max-overhead 1000 --json " + path("all.json"));
  EXPECT_EQ(r.status, 0) << r.err;
  std::vector<std::string> checked;
  const auto cases = nlohmann::json::parse(slurp(path("all.json")))["cases"];
  for (const auto& c : cases) checked.push_back(c["policy"]);
  EXPECT_EQ(checked, expected);
#else
  GTEST_SKIP() << "a portable build loads no plugins";
#endif
}

}  // namespace
}  // namespace memreplay
