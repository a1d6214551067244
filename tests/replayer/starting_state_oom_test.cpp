// A capacity below the state a truncated trace starts in (its adopted segments and blocks) is an
// OOM, not bad input: `fit` probes such caps for every policy (rmm_arena on
// gpt2_train.truncated was refused with exit 2, an empty cell in the README table).
#include <gtest/gtest.h>

#include "replayer/replay_runner.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

TEST(StartingStateUnderACap, IsAnOomAtTheFirstAdoptedBlock) {
  ReplayOptions options;
  options.trace_path = testing::imported_trace("gpt2_train.truncated");
  options.policy_spec = "rmm_arena";
  options.capacity = 1ull << 30;  // the trace starts with ~7 GiB live
  const ReplayMetrics m = run_replay(options);
  ASSERT_TRUE(m.oom_at_event);
  EXPECT_EQ(*m.oom_at_event, 0u);
  EXPECT_GT(m.oom_request_bytes.value_or(0), 0u);
  EXPECT_EQ(m.ooms, 1u);
}

// The same without a capacity, where the policy's own limit is what the state does not fit in
// (it was "the state the trace starts in does not fit on this device", exit 2).
TEST(StartingStateUnderAPolicysOwnLimit, IsAnOomAtTheFirstAdoptedBlockItCannotHold) {
  ReplayOptions options;
  options.trace_path = testing::imported_trace("gpt2_train.truncated");
  for (const char* policy : {"rmm_pool:maximum_pool_size:512MiB", "rmm_arena:arena_size:256MiB"}) {
    options.policy_spec = policy;
    const ReplayMetrics m = run_replay(options);
    ASSERT_TRUE(m.oom_at_event) << policy;
    EXPECT_EQ(*m.oom_at_event, 0u) << policy;
    EXPECT_GT(m.oom_request_bytes.value_or(0), 0u) << policy;
    EXPECT_EQ(m.ooms, 1u) << policy;
  }
}

TEST(StartingStateUnderACap, FitFindsTheSmallestCapacityForEveryPolicyWithoutError) {
  ReplayOptions options;
  options.trace_path = testing::imported_trace("gpt2_train.truncated");
  for (const char* policy : {"rmm_arena", "pytorch", "memreplay"}) {
    options.policy_spec = policy;
    const FitResult fit = find_min_capacity(options, 1 << 20);
    EXPECT_GE(fit.min_fit_bytes, fit.uncapped.requested_peak) << policy;
    EXPECT_LT(fit.max_fail_bytes, fit.min_fit_bytes) << policy;
    options.capacity = fit.max_fail_bytes;
    EXPECT_TRUE(run_replay(options).oom_at_event) << policy;
    options.capacity.reset();
  }
}

}  // namespace
}  // namespace memreplay
