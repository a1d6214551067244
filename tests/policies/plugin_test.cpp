// Policy plugins through the C ABI (policies/plugin/): loading and its errors, the checks that
// catch a plugin that breaks the contract, and the CLI's --plugin / MEMREPLAY_PLUGINS. The
// example plugin and a correct test plugin also run the whole contract suite
// (policy_contract_test.cpp loads them before the suite is built).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <string>
#include <vector>

#include "policies/plugin/plugin_loader.h"
#include "policies/registry.h"
#include "replayer/sim/sim_device.h"
#include "tests/support/cli_run.h"
#include "tests/support/test_support.h"

#ifdef MEMREPLAY_TEST_PLUGIN_DIR
namespace memreplay {
namespace {

std::string test_plugin(int mode) {
  return std::string(MEMREPLAY_TEST_PLUGIN_DIR) + "/test_plugin_" + std::to_string(mode) + ".so";
}

std::string load_error(const std::string& path) {
  return testing::error_of<PluginError>([&] { load_policy_plugin(path); });
}

TEST(PluginLoader, RefusesAWrongAbiVersionNamingBoth) {
  const std::string message = load_error(test_plugin(5));
  EXPECT_NE(message.find("plugin " + test_plugin(5) + ": ABI version 999, but this memreplay loads version 1"),
            std::string::npos)
      << message;
  EXPECT_EQ(PolicyRegistry::instance().find("plugin_abi"), nullptr);
}

TEST(PluginLoader, RefusesALibraryWithoutTheEntrySymbol) {
  const std::string message = load_error(test_plugin(6));
  EXPECT_NE(message.find("no symbol 'memreplay_policy_plugin_table'"), std::string::npos) << message;
}

TEST(PluginLoader, RefusesANameAlreadyTaken) {
  const std::string message = load_error(test_plugin(7));
  EXPECT_NE(message.find("policy name 'passthrough' is already taken"), std::string::npos) << message;
  size_t named = 0;
  for (const PolicyInfo& info : PolicyRegistry::instance().policies()) named += info.name == "passthrough";
  EXPECT_EQ(named, 1u);
}

TEST(PluginLoader, RefusesAFileThatIsNotALibrary) {
  const std::string message = load_error(std::string(MEMREPLAY_SOURCE_DIR) + "/README.md");
  EXPECT_NE(message.find("cannot load it"), std::string::npos) << message;
}

TEST(PluginLoader, ExamplePluginRegistersAndServesFromItsCache) {
  EXPECT_EQ(load_policy_plugin(MEMREPLAY_EXAMPLE_PLUGIN), "example_exact_size");
  EXPECT_EQ(load_policy_plugin(MEMREPLAY_EXAMPLE_PLUGIN), "example_exact_size");  // a second load is a no-op
  SimDevice device(SimDevice::Options{});
  auto policy = PolicyRegistry::instance().create("example_exact_size", device);
  const auto block = policy->allocate(1, 0);
  ASSERT_TRUE(block);
  EXPECT_EQ(block->size, 4096u);
  policy->free(block->address, 0);
  EXPECT_EQ(policy->allocate(4000, 0)->address, block->address);  // from the plugin's cache
  EXPECT_EQ(device.counters().malloc_calls, 1u);
  EXPECT_EQ(PolicyRegistry::instance().create("example_exact_size:round:65536", device)->allocate(1, 0)->size, 65536u);
  const std::string bad = testing::error_of<PolicySpecError>(
      [&] { PolicyRegistry::instance().create("example_exact_size:round:3", device); });
  EXPECT_NE(bad.find("expected round:BYTES (a power of two), got 'round:3'"), std::string::npos) << bad;
}

// Each misbehaving plugin's fault is caught where it happens, naming the policy.
std::string fault_of(int mode, int allocations) {
  const std::string name = load_policy_plugin(test_plugin(mode));
  SimDevice device(SimDevice::Options{});
  auto policy = PolicyRegistry::instance().create(name, device);
  return testing::error_of<PolicyContractError>([&] {
    for (int i = 0; i < allocations; ++i) {
      const auto block = policy->allocate(4096, 0);
      if (i == allocations - 1 && block) policy->free(block->address, 0);
    }
  });
}

// One misbehaving test plugin per fault (tests/plugin/misbehaving_plugin.c, MISBEHAVE = mode),
// and what the error that stops the replay must say.
struct PluginFault {
  const char* name;
  int mode;
  int allocations;
  std::vector<std::string> message_parts;
};

class PluginFaults : public ::testing::TestWithParam<PluginFault> {};

TEST_P(PluginFaults, IsCaughtWhereItHappensNamingThePolicy) {
  const std::string message = fault_of(GetParam().mode, GetParam().allocations);
  for (const std::string& part : GetParam().message_parts) EXPECT_THAT(message, ::testing::HasSubstr(part));
}

INSTANTIATE_TEST_SUITE_P(
    EachFault, PluginFaults,
    ::testing::Values(
        PluginFault{"AnOverlappingBlock",
                    1,
                    2,
                    {"plugin policy 'plugin_overlap' returned [0x", "which overlaps the live block at 0x"}},
        PluginFault{"ABlockSmallerThanTheRequest",
                    2,
                    1,
                    {"plugin policy 'plugin_too_small' returned a block of 4095 bytes for a request of 4096"}},
        PluginFault{"AFreeTwiceOfDeviceMemoryNotForwarded",
                    3,
                    1,
                    {"plugin policy 'plugin_double_free' freed device memory at 0x", "(freed twice?)"}},
        PluginFault{"AReportedErrorCarryingThePluginsMessage",
                    4,
                    3,
                    {"plugin policy 'plugin_error' reported an error on the allocate of 4096 bytes: injected fault"}},
        // Before: reserved 0 B and a fit of 0 B, from blocks the device never gave it.
        PluginFault{"ABlockAtAnAddressTheDeviceNeverGaveIt",
                    13,
                    2,
                    {"plugin policy 'plugin_foreign_block' returned [0x1000, +4096), which is not in device memory it "
                     "holds (one malloc, or mapped pages)"}},
        // Before: the overlap check's address + size wrapped, and the block passed.
        PluginFault{"ABlockOf2To64Minus1Bytes",
                    14,
                    2,
                    {"plugin policy 'plugin_huge_size' returned a block of 18446744073709551615 bytes at 0x",
                     "(past 2^48 bytes or the end of the address space)"}},
        PluginFault{"AnErrorMessageOfTwoLinesComesOutAsOne",
                    19,
                    3,
                    {"plugin policy 'plugin_error_newline' reported an error on the allocate of 4096 bytes: "
                     "two\\x0alines"}}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(PluginFaultChecks, AnUnterminatedErrorBufferIsReadOnlyUpToItsSize) {
  // create fills all 512 bytes of the buffer with 'x' and no terminator.
  const std::string name = load_policy_plugin(test_plugin(17));
  SimDevice device(SimDevice::Options{});
  const std::string message =
      testing::error_of<PolicySpecError>([&] { PolicyRegistry::instance().create(name, device); });
  EXPECT_EQ(message, std::string(512, 'x'));
}

TEST(PluginFaultChecks, AFreeOfAnUnknownAddressNeverReachesThePlugin) {
  load_policy_plugin(test_plugin(0));
  SimDevice device(SimDevice::Options{});
  auto policy = PolicyRegistry::instance().create("plugin_passthrough", device);
  EXPECT_THROW(policy->free(0x1234000, 0), PolicyContractError);
  EXPECT_EQ(device.counters().free_calls, 0u);
}

// ---- the CLI ----------------------------------------------------------------------------------

using testing::CliRun;
// `command` with stdout and stderr together.
CliRun run(const std::string& command) { return testing::run_shell(command); }

TEST(PluginCli, PluginFlagAndEnvironmentVariableBothLoad) {
  const std::string trace = testing::imported_trace("multistream_pipeline.default");
  const std::string cli = MEMREPLAY_CLI;
  CliRun r =
      run(cli + " replay " + trace + " --plugin " + MEMREPLAY_EXAMPLE_PLUGIN + " --policy example_exact_size --json -");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("\"policy\": \"example_exact_size\""), std::string::npos) << r.out;
  r = run("MEMREPLAY_PLUGINS=" + std::string(MEMREPLAY_EXAMPLE_PLUGIN) + " " + cli + " policies");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("example_exact_size"), std::string::npos) << r.out;
}

TEST(PluginCli, AMisbehavingPluginStopsTheReplayWithOneLineAndStatus2) {
  const std::string trace = testing::imported_trace("multistream_pipeline.default");
  const CliRun r =
      run(std::string(MEMREPLAY_CLI) + " replay " + trace + " --plugin " + test_plugin(1) + " --policy plugin_overlap");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find(trace + ": event "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("plugin policy 'plugin_overlap' returned"), std::string::npos) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
}

TEST(PluginCli, AnUnusablePluginIsOneLineAndStatus2) {
  const std::string trace = testing::imported_trace("multistream_pipeline.default");
  CliRun r =
      run(std::string(MEMREPLAY_CLI) + " replay " + trace + " --plugin " + test_plugin(5) + " --policy plugin_abi");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("ABI version 999"), std::string::npos) << r.out;
  r = run("MEMREPLAY_PLUGINS=/nonexistent/x.so " + std::string(MEMREPLAY_CLI) + " policies");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("MEMREPLAY_PLUGINS: plugin /nonexistent/x.so: cannot load it"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace memreplay
#endif
