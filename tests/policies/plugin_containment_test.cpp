// A plugin's faults that no C++ check can catch, contained (policies/plugin/plugin_guard.h): a
// crash, an abort, a stack overflow, an exit() or an exit handler inside a plugin call ends the
// CLI with one line naming the plugin, the call and the event, and exit status 2, never a verdict
// (a `check` that would fail does not pass, and writes no report). Also: the capacity holds for a
// plugin that maps pages (the device enforces it), and --lenient does not hide a plugin's fault.
// Each case runs the CLI (a plugin that crashes must not take the test binary with it).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "base/units.h"
#include "proto/trace_reader.h"
#include "tests/support/cli_run.h"
#include "tests/support/test_support.h"

#ifdef MEMREPLAY_TEST_PLUGIN_DIR
namespace memreplay {
namespace {

using testing::CliRun;

std::string test_plugin(int mode) {
  return std::string(MEMREPLAY_TEST_PLUGIN_DIR) + "/test_plugin_" + std::to_string(mode) + ".so";
}

const std::string& trace() {
  static const std::string path = testing::imported_trace("multistream_pipeline.default");
  return path;
}

// The index in the trace file of its `n`th allocation (1-based): where a plugin that misbehaves
// on its nth allocate call does.
uint64_t index_of_allocation(int n) {
  TraceReader reader(trace());
  std::vector<Event> batch;
  uint64_t index = 0;
  while (reader.next_batch(batch)) {
    for (const Event& e : batch) {
      if (e.kind == EventKind::alloc && e.device == 0 && e.size != 0 && !e.has_flag(kPreexisting) && --n == 0)
        return index;
      ++index;
    }
  }
  ADD_FAILURE() << "the trace has fewer allocations";
  return 0;
}

CliRun replay_with(int mode, const std::string& policy, const std::string& flags = "") {
  return testing::run_memreplay("replay " + trace() + " --plugin " + test_plugin(mode) + " --policy " + policy + " " +
                                flags);
}

size_t lines(const std::string& text) { return static_cast<size_t>(std::count(text.begin(), text.end(), '\n')); }

struct Contained {
  const char* name;
  int mode;
  const char* policy;
  const char* what;  // after "plugin policy 'POLICY' "
};

class ContainedFault : public ::testing::TestWithParam<Contained> {};

TEST_P(ContainedFault, EndsWithOneLineNamingThePluginTheCallAndTheEventAndStatus2) {
  const Contained& c = GetParam();
  const CliRun r = replay_with(c.mode, c.policy);
  EXPECT_EQ(r.status, 2) << r.out;
  const std::string expected = "memreplay: " + trace() + ": event " + std::to_string(index_of_allocation(3)) +
                               ": plugin policy '" + c.policy + "' " + c.what;
  EXPECT_EQ(r.out.rfind(expected, 0), 0u) << "expected: " << expected << "\ngot: " << r.out;
  EXPECT_EQ(lines(r.out), 1u) << r.out;
}

INSTANTIATE_TEST_SUITE_P(
    EachWayOut, ContainedFault,
    ::testing::Values(Contained{"ASegfault", 8, "plugin_segfault", "crashed in its allocate call (SIGSEGV"},
                      Contained{"AnAbort", 9, "plugin_abort", "crashed in its allocate call (SIGABRT"},
                      Contained{"AStackOverflow", 10, "plugin_stack", "crashed in its allocate call (SIGSEGV"},
                      Contained{"AnExit0", 11, "plugin_exit", "called exit(0) in its allocate call"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(PluginContainment, AnExitHandlerRegisteredInACallIsContainedWhenItRuns) {
  // create registers an exit handler that calls _exit(0): at the end of a replay that passed it
  // would only repeat the pass; what matters is that it runs as a plugin call, and ends with 2.
  const CliRun r = replay_with(12, "plugin_atexit");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("memreplay: plugin policy 'plugin_atexit' called _exit(0) in its exit handler\n"),
            std::string::npos)
      << r.out;
}

class PluginContainmentCli : public testing::TempDirTest {};

TEST_F(PluginContainmentCli, AnExitInsideACheckIsNoPassAndWritesNoReport) {
  // --max-reserved 1B fails every case: without containment the plugin's exit(0) passed it.
  const std::string junit = path("check.xml");
  const CliRun r =
      testing::run_memreplay("check " + trace() + " --policy plugin_exit --max-reserved 1B --junit " + junit, {},
                             "MEMREPLAY_PLUGINS=" + test_plugin(11));
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("plugin policy 'plugin_exit' called exit(0) in its allocate call"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(junit));
  // The same check with a plugin that behaves fails as it should.
  const CliRun honest = testing::run_memreplay("check " + trace() + " --policy plugin_passthrough --max-reserved 1B",
                                               {}, "MEMREPLAY_PLUGINS=" + test_plugin(0));
  EXPECT_EQ(honest.status, 1) << honest.out;
}

TEST_F(PluginContainmentCli, APluginThatMapsPastTheCapacityIsRefusedByTheDevice) {
  // It maps fresh pages for every block and never looks at the capacity: the device refuses the
  // map that would pass 1 GiB, an OOM (before: a 63.98 GiB reserved peak under a 1 GiB cap).
  const CliRun r = testing::run_memreplay(
      "replay " + trace() + " --plugin " + test_plugin(18) + " --policy plugin_map_past_cap --capacity 1GiB --json -",
      dir_);
  ASSERT_EQ(r.status, 1) << "replay's status for an OOM\n" << r.out << r.err;
  const auto m = nlohmann::json::parse(r.out);
  EXPECT_LE(m["reserved_peak"].get<uint64_t>(), kGiB);
  EXPECT_FALSE(m["oom_at_event"].is_null()) << "an OOM where the cap is reached";
  EXPECT_GE(m["device_counters"]["failed"].get<uint64_t>(), 1u);
}

TEST(PluginContainment, LenientDoesNotHideAPluginsFault) {
  // The plugin frees device memory twice: --lenient skipped 451 events of it and printed a table.
  for (const std::string flags : {"", "--lenient"}) {
    const CliRun r = replay_with(3, "plugin_double_free", flags);
    EXPECT_EQ(r.status, 2) << flags << ": " << r.out;
    EXPECT_NE(r.out.find(trace() + ": event "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("plugin policy 'plugin_double_free' freed device memory at 0x"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("--lenient"), std::string::npos) << "no advice to skip a policy's fault: " << r.out;
    EXPECT_EQ(lines(r.out), 1u) << r.out;
  }
}

TEST(PluginContainment, NamesThatAreNotOnePrintableLineAreRefusedAtLoad) {
  for (const int mode : {15, 16}) {
    const CliRun r = replay_with(mode, "plugin_bad_name");
    EXPECT_EQ(r.status, 2) << r.out;
    EXPECT_NE(r.out.find("plugin " + test_plugin(mode) + ": its policy name 'plugin"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("is not one line of printable UTF-8"), std::string::npos) << r.out;
    EXPECT_EQ(lines(r.out), 1u) << r.out;
  }
}

}  // namespace
}  // namespace memreplay
#endif
