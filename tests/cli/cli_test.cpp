// The memreplay binary end to end: exit statuses, one-line errors, JSON outputs.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "proto/trace_writer.h"
#include "tests/support/cli_run.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

namespace fs = std::filesystem;

// stdout and stderr together, in the order written.
testing::CliRun run_cli(const std::string& arguments) { return testing::run_memreplay(arguments); }

fs::path scratch(const std::string& name) {
  const auto dir = fs::temp_directory_path() / ("memreplay-cli-test-" + std::to_string(getpid()));
  fs::create_directories(dir);
  return dir / name;
}

std::string bundled(const std::string& name) { return (testing::source_dir() / "traces" / name).string(); }

// A trace whose pool assignment is inconsistent (bad input): an allocation of pool 1
// inside a segment of the default pool. replay and validate name the event and exit 2; replay
// --lenient counts and skips it.
TEST(Cli, InconsistentPoolAssignmentIsRefusedWithTheEventIndex) {
  const auto trace = scratch("bad_pools.mrt");
  {
    TraceWriter writer(trace.string());
    proto::TraceHeader header;
    header.set_source("api");
    proto::PoolInfo* pool = header.add_pools();
    pool->set_id(1);
    pool->set_kind("mempool");
    writer.begin(header);
    writer.append(Event{.kind = EventKind::segment_alloc, .time_ns = 1, .address = 0x100000, .size = 2 << 20});
    writer.append(Event{.kind = EventKind::alloc, .time_ns = 2, .address = 0x100000, .size = 4096});
    writer.append(Event{.kind = EventKind::alloc, .pool = 1, .time_ns = 3, .address = 0x101000, .size = 4096});
    writer.finish();
  }
  auto r = run_cli("replay " + trace.string() + " --policy pytorch");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("event 2: alloc in pool 1 at 0x101000 lies in a segment of pool 0"), std::string::npos) << r.out;
  r = run_cli("validate " + trace.string());
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("event 2: alloc in pool 1"), std::string::npos) << r.out;
  // The JSON on stdout counts what --lenient skipped; stderr names it too.
  r = testing::run_memreplay("replay " + trace.string() + " --policy pytorch --lenient --json -", trace.parent_path());
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["skipped_events"], 1) << r.out;
  EXPECT_NE(r.err.find("memreplay: warning: " + trace.string() +
                       ": --lenient skipped 1 event inconsistent with the live state (the first: event 2: alloc in "
                       "pool 1 at 0x101000 lies in a segment of pool 0"),
            std::string::npos)
      << r.err;
}

TEST(Cli, ImportInfoReplayOnABundledRealTrace) {
  const auto trace = scratch("multistream.mrt");
  auto r = run_cli("import " + bundled("multistream_pipeline.default.pickle.xz") + " -o " + trace.string());
  ASSERT_EQ(r.status, 0) << r.out;
  r = run_cli("info --json " + trace.string());
  ASSERT_EQ(r.status, 0) << r.out;
  const auto info = nlohmann::json::parse(r.out);
  EXPECT_EQ(info["devices"][0]["events_per_kind"]["alloc"], 546);
  EXPECT_EQ(info["devices"][0]["streams"].size(), 3u);
  EXPECT_EQ(info["devices"][0]["peak_requested_bytes"], 468402176);

  r = run_cli("replay " + trace.string() + " --policy pytorch --json -");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto metrics = nlohmann::json::parse(r.out);
  EXPECT_EQ(metrics["reserved_peak"], 683671552);  // groundtruth/replay/multistream_pipeline.default.default
  EXPECT_EQ(metrics["device_alloc_calls"], 15);

  r = run_cli("validate " + trace.string());
  EXPECT_EQ(r.status, 0) << r.out;
}

TEST(Cli, CompareWritesOneJsonWithEveryPolicy) {
  const auto trace = scratch("multistream2.mrt");
  ASSERT_EQ(run_cli("import " + bundled("multistream_pipeline.default.pickle.xz") + " -o " + trace.string()).status, 0);
  const auto json_path = scratch("compare.json");
  const auto r = run_cli("compare " + trace.string() + " --policy pytorch --policy pytorch:expandable_segments:True" +
                         " --policy passthrough --json " + json_path.string());
  ASSERT_EQ(r.status, 0) << r.out;
  std::ifstream in(json_path);
  const auto json = nlohmann::json::parse(in);
  ASSERT_EQ(json["results"].size(), 3u);
  EXPECT_EQ(json["results"][1]["reserved_peak"], 612368384);  // ...multistream_pipeline.default.expandable
}

TEST(Cli, FitAtACapacityNamesTheFailingEvent) {
  const auto trace = scratch("multistream3.mrt");
  ASSERT_EQ(run_cli("import " + bundled("multistream_pipeline.default.pickle.xz") + " -o " + trace.string()).status, 0);
  const auto r = run_cli("fit " + trace.string() + " --policy pytorch --capacity 300MiB --json -");
  ASSERT_EQ(r.status, 1) << r.out;  // fit --capacity exits 1 when the trace does not fit there
  const auto json = nlohmann::json::parse(r.out);
  EXPECT_FALSE(json["fits"].get<bool>());
  EXPECT_TRUE(json["oom"]["replay_event"].is_number());
}

TEST(Cli, HostilePickleIsRefusedAndLeavesNoOutput) {
  const auto input = scratch("evil.pickle");
  {
    std::ofstream out(input, std::ios::binary);
    // pickle.dumps(os.system, protocol=4): PROTO, FRAME(14), "os", "system", STACK_GLOBAL, STOP.
    static constexpr char kPickle[] = "\x80\x04\x95\x0e\x00\x00\x00\x00\x00\x00\x00\x8c\x02os\x8c\x06system\x93.";
    out << std::string(kPickle, sizeof kPickle - 1);
  }
  const auto output = scratch("evil.mrt");
  const auto r = run_cli("import " + input.string() + " -o " + output.string());
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("STACK_GLOBAL"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(input.string()), std::string::npos) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  EXPECT_FALSE(fs::exists(output));
}

TEST(Cli, DamagedTraceGivesOneLineAndStatus2) {
  const auto trace = scratch("damaged.mrt");
  {
    std::ofstream out(trace, std::ios::binary);
    out << "MRTRACE1" << std::string(40, '\x7f');
  }
  const auto r = run_cli("info " + trace.string());
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("byte"), std::string::npos) << r.out;
}

TEST(Cli, BadPolicyOptionsAreNamed) {
  const auto trace = scratch("multistream4.mrt");
  ASSERT_EQ(run_cli("import " + bundled("multistream_pipeline.default.pickle.xz") + " -o " + trace.string()).status, 0);
  auto r = run_cli("replay " + trace.string() + " --policy pytorch:max_split_size_mb:banana");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("max_split_size_mb"), std::string::npos) << r.out;
  r = run_cli("replay " + trace.string() + " --policy nosuchpolicy");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("pytorch"), std::string::npos) << r.out;  // lists the valid ones
  r = run_cli("replay " + trace.string() + " --capacity 12 parsecs");
  EXPECT_EQ(r.status, 2) << r.out;
  // Every policy through the one option parser: key and value named, one line.
  r = run_cli("replay " + trace.string() + " --policy cuda_async:reuse_allow_opportunistic:yes");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("'reuse_allow_opportunistic': expected True, False, true or false, got 'yes'"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  r = run_cli("replay " + trace.string() + " --policy passthrough:fast:True");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("unknown option 'fast'"), std::string::npos) << r.out;
  r = run_cli("replay " + trace.string() + " --policy cuda_async:release_threshold:1GiB --json -");
  EXPECT_EQ(r.status, 0) << r.out;
}

TEST(Cli, PolicyStatsKeepPyTorchsNamesWithTheDevicesCounts) {
  const auto trace = scratch("multistream5.mrt");
  ASSERT_EQ(run_cli("import " + bundled("multistream_pipeline.default.pickle.xz") + " -o " + trace.string()).status, 0);
  auto r = run_cli("replay " + trace.string() + " --policy pytorch --json -");
  ASSERT_EQ(r.status, 0) << r.out;
  auto metrics = nlohmann::json::parse(r.out);
  const auto& stats = metrics["policy_stats"];
  EXPECT_EQ(stats["num_device_alloc"], metrics["device_alloc_calls"]);
  EXPECT_EQ(stats["num_device_free"], metrics["device_free_calls"]);
  EXPECT_EQ(stats["reserved_bytes.all.peak"], metrics["reserved_peak"]);
  EXPECT_EQ(stats["num_alloc_retries"], metrics["alloc_retries"]);
  for (const char* key : {"allocated_bytes.all.peak", "segment.all.current", "num_ooms", "num_sync_all_streams",
                          "inactive_split_bytes.all.current", "oversize_segments.all.peak"})
    EXPECT_TRUE(stats.contains(key)) << key;

  r = run_cli("replay " + trace.string() + " --policy cuda_async --json -");
  ASSERT_EQ(r.status, 0) << r.out;
  metrics = nlohmann::json::parse(r.out);
  EXPECT_EQ(metrics["policy_stats"]["pool_reserved_mem_high"], metrics["device_counters"]["pool_reserved_peak"]);
  EXPECT_EQ(metrics["policy_stats"].size(), 2u);
}

TEST(Cli, ValidateNamesEachProblemWithItsEventIndex) {
  const auto trace = scratch("broken.mrt");
  {
    TraceWriter writer(trace.string());
    writer.begin(proto::TraceHeader{});
    writer.append(Event{.kind = EventKind::alloc, .time_ns = 10, .address = 0x1000, .size = 100});
    writer.append(Event{.kind = EventKind::alloc, .time_ns = 20, .address = 0x1010, .size = 100});  // overlaps
    writer.append(Event{.kind = EventKind::free_completed, .time_ns = 5, .address = 0x5000});  // unknown, earlier
    writer.append(Event{.kind = EventKind::alloc, .time_ns = 30, .address = 0x1000, .size = 8});  // double
    writer.finish();
  }
  const auto r = run_cli("validate " + trace.string() + " --json -");
  EXPECT_EQ(r.status, 2) << r.out;
  const auto json = nlohmann::json::parse(r.out);
  EXPECT_EQ(json["problems_by_kind"]["overlapping_blocks"], 1);
  EXPECT_EQ(json["problems_by_kind"]["free_unknown_address"], 1);
  EXPECT_EQ(json["problems_by_kind"]["time_backwards"], 1);
  EXPECT_EQ(json["problems_by_kind"]["double_alloc"], 1);
  EXPECT_EQ(json["problems"][0]["event"], 1);
}

TEST(Cli, ReplayRefusesAnInconsistentTraceUnlessLenient) {
  const auto trace = scratch("inconsistent.mrt");
  {
    TraceWriter writer(trace.string());
    writer.begin(proto::TraceHeader{});
    writer.append(Event{.kind = EventKind::alloc, .address = 0x1000, .size = 100});
    writer.append(Event{.kind = EventKind::free_completed, .address = 0x2000});
    writer.finish();
  }
  auto r = run_cli("replay " + trace.string() + " --policy pytorch");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("event 1"), std::string::npos) << r.out;
  r = testing::run_memreplay("replay " + trace.string() + " --policy pytorch --lenient --json -", trace.parent_path());
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["skipped_events"], 1);
  EXPECT_EQ(nlohmann::json::parse(r.out)["first_skipped"],
            "event 1: free_completed of 0x2000, which is not a live block");
  // The table counts them in a column of its own, and stderr says so.
  r = testing::run_memreplay("replay " + trace.string() + " --policy pytorch --lenient", trace.parent_path());
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("skipped\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("events (5)\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("yes           1\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(5) events --lenient skipped as inconsistent"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("--lenient skipped 1 event inconsistent with the live state (the first: event 1: "
                       "free_completed of 0x2000, which is not a live block); the numbers leave it out"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace memreplay
