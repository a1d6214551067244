// The synthetic fleet's jobs: a scaled copy holds every event of the real trace, each size and
// address times the factor and each time shifted, and replays as the same job at that scale.
#include <gtest/gtest.h>

#include "proto/trace_reader.h"
#include "replayer/replay_runner.h"
#include "tests/support/test_support.h"
#include "tools/bench/scaled_trace.h"

namespace memreplay {
namespace {

class ScaledTrace : public testing::TempDirTest {};

TEST_F(ScaledTrace, EveryEventScaledAndShiftedAndTheJobReplaysAtScale) {
  const std::string real = testing::imported_trace("resnet50_train.default");
  const std::string copy = path("x3.mrt");
  const uint64_t shift = 86400ull * 1000000000ull;
  const uint64_t written = bench::write_scaled_copy(real, copy, {3, shift});
  const auto before = TraceReader::read_all(real);
  const auto after = TraceReader::read_all(copy);
  ASSERT_EQ(after.size(), before.size());
  EXPECT_EQ(written, before.size());
  for (size_t i = 0; i < before.size(); ++i) {
    EXPECT_EQ(after[i].kind, before[i].kind) << i;
    EXPECT_EQ(after[i].time_ns, before[i].time_ns + shift) << i;
    EXPECT_EQ(after[i].address, before[i].address * 3) << i;
    EXPECT_EQ(after[i].stream, before[i].stream) << i;
    if (before[i].kind == EventKind::alloc) EXPECT_EQ(after[i].size, before[i].size * 3) << i;
  }
  TraceReader scaled(copy);
  EXPECT_EQ(scaled.header().devices(0).total_memory(), TraceReader(real).header().devices(0).total_memory() * 3);
  ReplayOptions options;
  options.trace_path = real;
  const ReplayMetrics one = run_replay(options);
  options.trace_path = copy;
  const ReplayMetrics three = run_replay(options);
  EXPECT_EQ(three.requested_peak, one.requested_peak * 3);
  EXPECT_EQ(three.events, one.events);
  EXPECT_FALSE(three.oom_at_event);
  EXPECT_GT(three.reserved_peak, 2 * one.reserved_peak);
}

}  // namespace
}  // namespace memreplay
