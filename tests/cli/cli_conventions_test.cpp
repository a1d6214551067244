// What a new user trips on: capacities need units, silent no-ops warn, one --json
// convention, compare marks OOM and names its columns, advise gives evidence, record always
// leaves a trace.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "tests/support/cli_run.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

namespace fs = std::filesystem;

class CliConventions : public testing::CliTest {
 protected:
  std::string trace() { return testing::imported_trace("multistream_pipeline.default"); }
  // A replay of trace() with `options` exits with `status` and says `text` on stderr.
  void expect_replay_says(const std::string& options, int status, const std::string& text) {
    const auto r = run("replay " + trace() + " " + options);
    EXPECT_EQ(r.status, status);
    EXPECT_NE(r.err.find(text), std::string::npos) << r.err;
  }
};

TEST_F(CliConventions, CapacityTakesUnitsAndRefusesEmptyAndUnitlessFractions) {
  auto r = run("replay " + trace() + " --policy pytorch --capacity 7.5GiB --json -");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["capacity"], 8053063680u);
  expect_replay_says("--policy pytorch --capacity 7.5", 2, "--capacity '7.5': a fraction needs a unit");
  expect_replay_says("--policy pytorch --capacity ''", 2, "--capacity ''");
  expect_replay_says("--policy pytorch --capacity 8589934592 --json -", 0,
                     "has no unit: read as 8589934592 bytes (8.00 GiB)");
}

TEST_F(CliConventions, SilentNoOpsWarn) {
  expect_replay_says("--policy pytorch:garbage_collection_threshold:0.8 --json -", 0,
                     "garbage_collection_threshold acts only under a per-process limit");
  expect_replay_says("--policy pytorch --trace-device 3 --json -", 0, "no alloc or free events on trace device 3");
  const auto r =
      run("replay " + trace() + " --policy pytorch:per_process_memory_fraction:0.5 --capacity 1GiB --json -");
  EXPECT_NE(r.err.find("per_process_memory_fraction is ignored"), std::string::npos) << r.err;
}

TEST_F(CliConventions, OneJsonConventionForEveryCommand) {
  // --json alone: stdout, and only JSON there.
  for (const std::string command :
       {"info " + trace() + " --json", "info --json " + trace(), "validate " + trace() + " --json",
        "replay " + trace() + " --json", "fit " + trace() + " --policy pytorch --grid 4 --json"}) {
    const auto r = run(command);
    EXPECT_EQ(r.status, 0) << command << ": " << r.err;
    EXPECT_NO_THROW((void)nlohmann::json::parse(r.out)) << command << ": " << r.out;
  }
  // --json FILE.json and --json=FILE.
  EXPECT_EQ(run("info " + trace() + " --json " + path("info.json")).status, 0);
  EXPECT_TRUE(nlohmann::json::parse(testing::slurp(path("info.json"))).contains("devices"));
  EXPECT_EQ(run("compare " + trace() + " --policy pytorch --json=" + path("compare.out")).status, 0);
  const auto compare = nlohmann::json::parse(testing::slurp(path("compare.out")));
  EXPECT_EQ(compare["schema"], "memreplay-compare");
  EXPECT_EQ(compare["schema_version"], 3);
  EXPECT_TRUE(compare.contains("capacity"));
  EXPECT_EQ(compare["options"]["device"], "sim");
  EXPECT_DOUBLE_EQ(compare["results"][0]["reserved_over_requested"].get<double>(), 683671552.0 / 468402176.0);
}

TEST_F(CliConventions, CompareLeadsWithTheRatioAndMarksOomRows) {
  // 447 MiB: pytorch fails (its partial reserved peak, 428 MiB, is below passthrough's), passthrough
  // needs only the requested 446.7 MiB, but with 1,088 device calls against pytorch's 15 uncapped.
  const auto r = run("compare " + trace() + " --policy pytorch --policy passthrough --capacity 447MiB");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("requested"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("free space"), std::string::npos);
  EXPECT_NE(r.out.find("1 - largest free range / all free bytes"), std::string::npos);
  std::string pytorch_row, passthrough_row;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("pytorch ") != std::string::npos && pytorch_row.empty()) pytorch_row = line;
    if (line.find("passthrough ") != std::string::npos) passthrough_row = line;
  }
  EXPECT_NE(pytorch_row.find(" NO"), std::string::npos) << r.out;
  EXPECT_EQ(pytorch_row.rfind("* ", 0), std::string::npos) << "a failed replay is never the best: " << pytorch_row;
  EXPECT_EQ(passthrough_row.rfind("* ", 0), std::string::npos) << "70x the device calls: " << r.out;
  EXPECT_NE(r.out.find("none qualifies, so none is starred"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(
      run("compare " + trace() + " --policy pytorch --policy passthrough --capacity 447MiB --json -").out);
  EXPECT_TRUE(j["recommended"].is_null());
  EXPECT_EQ(j["call_rule"]["reference_calls"], 15);  // pytorch's whole run: the capped one stopped at its OOM
  EXPECT_EQ(j["results"][1]["standing"], "too_many_calls");
}

TEST_F(CliConventions, FitTakesSeveralPoliciesAndSaysWhenFittingIsNotMonotonic) {
  const std::string vit = testing::imported_trace("vit_infer_varbatch.default");
  auto r = run("fit " + vit + " --policy pytorch --policy pytorch:expandable_segments:True --json -");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_FALSE(j["results"][0]["monotonic"].get<bool>());
  EXPECT_LT(j["results"][0]["min_fit_bytes"], j["results"][0]["max_fail_bytes"]);
  EXPECT_GT(j["results"][0]["fits_above_bytes"], j["results"][0]["max_fail_bytes"]);
  r = run("fit " + vit + " --policy pytorch");
  EXPECT_NE(r.out.find("NOT monotonic"), std::string::npos) << r.out;
  // At a capacity: exit 1 when it does not fit.
  EXPECT_EQ(run("fit " + vit + " --policy pytorch --capacity 900MiB").status, 1);
  EXPECT_EQ(run("fit " + vit + " --policy pytorch --capacity 2GiB").status, 0);
}

TEST_F(CliConventions, AdviseRanksSettingsWithEvidenceAndCountsEmptyCache) {
  const auto r = run("advise " + testing::imported_trace("vit_infer_varbatch.emptycache") + " --json -");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto a = nlohmann::json::parse(r.out);
  EXPECT_EQ(a["empty_cache_calls"], 5);
  ASSERT_FALSE(a["items"].empty());
  EXPECT_NE(a["items"][0]["title"].get<std::string>().find("empty_cache() is called in a loop"), std::string::npos);
  EXPECT_NE(a["items"][0]["evidence"].get<std::string>().find("extra device calls"), std::string::npos);
  bool expandable = false;
  for (const auto& item : a["items"])
    expandable = expandable || item["paste"] == "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True";
  EXPECT_TRUE(expandable) << a["items"].dump(2);
  // Candidates ranked by reserved peak; the current setting's numbers are those of replay.
  for (size_t i = 1; i < a["candidates"].size(); ++i)
    if (!a["candidates"][i]["oom"].get<bool>())
      EXPECT_LE(a["candidates"][i - 1]["reserved_peak"], a["candidates"][i]["reserved_peak"]);
  EXPECT_TRUE(a["current"]["fits_on_gpu"]["24GB"].get<bool>());
  // The one-pass replays (results/replay_batch.h) give what a plain replay gives.
  const auto plain =
      run("replay " + testing::imported_trace("vit_infer_varbatch.emptycache") + " --policy pytorch --json");
  const auto m = nlohmann::json::parse(plain.out);
  EXPECT_EQ(a["current"]["reserved_peak"], m["reserved_peak"]);
  EXPECT_EQ(a["current"]["device_alloc_calls"], m["device_alloc_calls"]);
}

TEST_F(CliConventions, ReplayExitsOneWhenItRunsOutOfMemory) {
  auto r = run("replay " + trace() + " --policy pytorch --capacity 4MiB");
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.out.find("OOM at replay event"), std::string::npos) << r.out;
  r = run("replay " + trace() + " --policy pytorch --capacity 4MiB --json -");
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(nlohmann::json::parse(r.out)["oom_at_event"].is_number()) << r.out;
  r = run("replay " + trace() + " --policy pytorch --capacity 4MiB --keep-going --json -");
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_GT(nlohmann::json::parse(r.out)["ooms"].get<uint64_t>(), 1u) << r.out;
  r = run("replay " + trace() + " --policy pytorch --capacity 100GiB --json -");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(nlohmann::json::parse(r.out)["oom_at_event"].is_null());
  r = run("replay " + trace() + " --policy nosuchpolicy --capacity 4MiB");
  EXPECT_EQ(r.status, 2) << r.err;
}

TEST_F(CliConventions, FitWarnsOfAnIncompleteTraceOncePerCommand) {
  const std::string cut = path("cut.mrt");
  fs::copy_file(trace(), cut);
  fs::resize_file(cut, fs::file_size(cut) - 40);
  for (const std::string capacity : {"", " --capacity 100GiB"}) {
    const auto r = run("fit " + cut +
                       " --policy pytorch --policy passthrough --policy pytorch:expandable_segments:True "
                       "--grid 4 --json -" +
                       capacity);
    ASSERT_EQ(r.status, 0) << r.err;
    size_t warnings = 0;
    for (size_t at = r.err.find("is incomplete"); at != std::string::npos; at = r.err.find("is incomplete", at + 1))
      ++warnings;
    EXPECT_EQ(warnings, 1u) << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["results"].size(), 3u);
  }
}

#if defined(MEMREPLAY_INTERPOSER_LIB)
TEST_F(CliConventions, RecordLeavesAValidEmptyTraceWhenTheProgramMakesNoCudaCall) {
  const std::string out = path("none.mrt");
  // Under the sanitizers the interposer carries ASan into `true`, which must not insist on coming first.
  const auto r = testing::run_memreplay(
      "record -q -o " + out + " --interposer " + std::string(MEMREPLAY_INTERPOSER_LIB) + " -- true", dir_,
      "ASAN_OPTIONS=verify_asan_link_order=0");
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_TRUE(fs::exists(out)) << r.err;
  const auto info = run("info " + out + " --json");
  ASSERT_EQ(info.status, 0) << info.err;
  const auto j = nlohmann::json::parse(info.out);
  EXPECT_TRUE(j["complete"].get<bool>());
  EXPECT_TRUE(j["devices"].empty());
}
#endif

}  // namespace
}  // namespace memreplay
