// replay_traces (results/replay_batch.h), what `check` runs over several traces: its worker
// threads must give each trace the numbers one thread gives it, in the order of the traces, and
// hand a damaged trace's error back. It runs under ThreadSanitizer too (.ci/run).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "proto/input_error.h"
#include "results/replay_batch.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

std::vector<ReplayOptions> traces_of(const std::vector<std::string>& paths) {
  std::vector<ReplayOptions> traces;
  for (const std::string& p : paths) traces.push_back(ReplayOptions{.trace_path = p});
  return traces;
}

TEST(ReplayBatch, TracesOnSeveralThreadsGetTheNumbersOfOneThreadInTheirOrder) {
  const std::vector<std::string> paths = {
      testing::imported_trace("multistream_pipeline.default"), testing::imported_trace("gpt2_train.truncated"),
      testing::imported_trace("vit_infer_varbatch.default"), testing::imported_trace("multistream_pipeline.default")};
  const std::vector<std::string> policies = {"pytorch", "pytorch:expandable_segments:True"};
  const auto one = results::replay_traces(traces_of(paths), policies, 1);
  const auto three = results::replay_traces(traces_of(paths), policies, 3);
  ASSERT_EQ(one.size(), paths.size());
  ASSERT_EQ(three.size(), paths.size());
  for (size_t t = 0; t < paths.size(); ++t) {
    SCOPED_TRACE(paths[t]);
    ASSERT_EQ(three[t].metrics.size(), policies.size());
    EXPECT_EQ(three[t].complete, one[t].complete);
    for (size_t p = 0; p < policies.size(); ++p) {
      EXPECT_EQ(three[t].metrics[p].policy, policies[p]);
      EXPECT_GT(three[t].metrics[p].events, 0u);
      EXPECT_EQ(three[t].metrics[p].events, one[t].metrics[p].events);
      EXPECT_EQ(three[t].metrics[p].reserved_peak, one[t].metrics[p].reserved_peak);
      EXPECT_EQ(three[t].metrics[p].allocated_peak, one[t].metrics[p].allocated_peak);
      EXPECT_EQ(three[t].metrics[p].device_alloc_calls, one[t].metrics[p].device_alloc_calls);
      EXPECT_EQ(three[t].metrics[p].device_free_calls, one[t].metrics[p].device_free_calls);
    }
  }
  // The same trace twice, first and last: the same numbers whichever thread took it.
  EXPECT_EQ(three[0].metrics[0].reserved_peak, three[3].metrics[0].reserved_peak);
  EXPECT_NE(three[0].metrics[0].reserved_peak, three[2].metrics[0].reserved_peak);
}

TEST(ReplayBatch, AMissingTraceAmongOthersIsTheErrorThrown) {
  const std::vector<std::string> paths = {testing::imported_trace("multistream_pipeline.default"),
                                          "/nonexistent/replay_batch.mrt",
                                          testing::imported_trace("multistream_pipeline.default")};
  const std::string error =
      testing::error_of<InputError>([&] { results::replay_traces(traces_of(paths), {"pytorch"}, 3); });
  EXPECT_NE(error.find("/nonexistent/replay_batch.mrt"), std::string::npos) << error;
}

}  // namespace
}  // namespace memreplay
