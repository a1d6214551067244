// One definition of device calls (replayer/metrics.h, DeviceCalls: mallocs, frees, maps, unmaps,
// pool grows and trims; device_calls their sum) in every command: replay, compare, advise, fit,
// report and check give the same count, each kind apart, and the tables define it under them.
// cuda_async, whose calls are all pool grows, read 0 in compare and 53 -> 27 in advise before.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "replayer/replay_runner.h"
#include "results/check.h"
#include "tests/support/cli_run.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

class DeviceCallsEverywhere : public testing::TempDirTest {
 protected:
  nlohmann::json json_of(const std::string& arguments) {
    const auto r = testing::run_memreplay(arguments, dir_);
    EXPECT_LE(r.status, 1) << arguments << "\n" << r.err;
    return nlohmann::json::parse(r.out);
  }
};

TEST_F(DeviceCallsEverywhere, CudaAsyncCountsTheSameInEveryCommand) {
  const std::string trace = testing::imported_trace("vit_infer_varbatch.emptycache");
  ReplayOptions o;
  o.trace_path = trace;
  o.policy_spec = "cuda_async";
  const ReplayMetrics m = run_replay(o);
  const DeviceCalls& d = m.device_calls;
  ASSERT_GT(d.pool_grows, 0u);
  ASSERT_GT(d.pool_trims, 0u) << "the trace's empty_cache() calls trim the pool";
  EXPECT_EQ(d.total(), d.mallocs + d.frees + d.maps + d.unmaps + d.pool_grows + d.pool_trims);
  EXPECT_EQ(total_device_calls(m), d.total());
  EXPECT_EQ(results::metric_values(m, std::nullopt).at("device_calls"), double(d.total()));
  const uint64_t calls = d.total();

  const auto replay = json_of("replay " + trace + " --policy cuda_async --json -");
  EXPECT_EQ(replay["device_calls"], calls);
  EXPECT_EQ(replay["device_calls_by_kind"]["pool_grows"], d.pool_grows);
  EXPECT_EQ(replay["device_calls_by_kind"]["pool_trims"], d.pool_trims);
  const auto compare = json_of("compare " + trace + " --policy pytorch --policy cuda_async --json -");
  EXPECT_EQ(compare["results"][1]["device_calls"], calls);
  const auto advise = json_of("advise " + trace + " --policy cuda_async --no-fit --json -");
  EXPECT_EQ(advise["current"]["device_calls"], calls);
  EXPECT_EQ(advise["current"]["device_calls_by_kind"]["pool_grows"], d.pool_grows);
  const auto fit = json_of("fit " + trace + " --policy cuda_async --capacity 100GiB --json -");
  EXPECT_EQ(fit["metrics"]["device_calls"], calls);
  const auto report =
      json_of("report " + trace + " --policy pytorch --policy cuda_async -o " + path("r.html") + " --json -");
  EXPECT_EQ(report["policies"][1]["metrics"]["device_calls"], calls);
  EXPECT_EQ(report["advice"]["current"]["device_calls"], report["policies"][0]["metrics"]["device_calls"]);

  // The tables: the same number in the row, the definition under it, each kind with --wide.
  const auto table = testing::run_memreplay("compare " + trace + " --policy cuda_async --policy pytorch", dir_);
  EXPECT_NE(table.out.find("device calls = mallocs + frees + maps + unmaps + pool grows + pool trims"),
            std::string::npos)
      << table.out;
  const auto wide = testing::run_memreplay("replay " + trace + " --policy cuda_async --wide", dir_);
  for (const char* column : {"mallocs", "frees", "maps", "unmaps", "pool", "grows", "trims"})
    EXPECT_NE(wide.out.find(column), std::string::npos) << column << "\n" << wide.out;
  const auto advise_text = testing::run_memreplay("advise " + trace + " --policy cuda_async --no-fit", dir_);
  EXPECT_NE(advise_text.out.find("device calls " + std::to_string(calls)), std::string::npos) << advise_text.out;
}

}  // namespace
}  // namespace memreplay
