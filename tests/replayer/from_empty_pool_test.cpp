// ReplayOptions::from_empty_pool on a trace that starts mid-run (gpt2_train.truncated: 137
// segments and 679 live blocks rebuilt at its first entry): the replay is the one of the same
// trace with its starting state taken out by hand (the kPreexisting events, and the frees of the
// blocks live at the start), for every policy family.
#include <gtest/gtest.h>

#include <unordered_set>
#include <vector>

#include "proto/trace_reader.h"
#include "proto/trace_writer.h"
#include "replayer/replay_runner.h"
#include "tests/support/same_figures.h"
#include "tests/support/test_support.h"
#include "tests/support/trace_rewrite.h"

namespace memreplay {
namespace {

class FromEmptyPool : public testing::TempDirTest {
 protected:
  // The trace without its starting state: what from_empty_pool must replay.
  std::string without_starting_state(const std::string& trace) {
    const std::string out = path("without_starting_state.mrt");
    std::unordered_set<uint64_t> left_out;  // blocks live at the start, until freed
    testing::rewrite_trace(
        trace, out, [](proto::TraceHeader& header) { header.set_starts_mid_run(false); },
        [&](Event& e) {
          if (e.has_flag(kPreexisting)) {
            if (e.kind == EventKind::alloc && e.size != 0) left_out.insert(e.address);
            return false;
          }
          if ((e.kind == EventKind::free_requested || e.kind == EventKind::free_completed) &&
              left_out.contains(e.address)) {
            if (e.kind == EventKind::free_completed) left_out.erase(e.address);
            return false;
          }
          e.stack = 0;  // (the replay does not read stacks)
          return true;
        });
    return out;
  }
};

TEST_F(FromEmptyPool, ReplaysTheTraceWithoutItsStartingState) {
  ReplayOptions options;
  options.trace_path = testing::imported_trace("gpt2_train.truncated");
  const std::string by_hand = without_starting_state(options.trace_path);
  for (const char* policy : {"pytorch", "pytorch:expandable_segments:True", "bfc", "rmm_pool", "passthrough"}) {
    SCOPED_TRACE(policy);
    options.policy_spec = policy;
    options.from_empty_pool = false;
    const ReplayMetrics adopted = run_replay(options);
    options.from_empty_pool = true;
    const ReplayMetrics fresh = run_replay(options);
    ReplayOptions plain = options;
    plain.trace_path = by_hand;
    plain.from_empty_pool = false;
    const ReplayMetrics expected = run_replay(plain);

    EXPECT_EQ(adopted.preexisting_segments, 137u);
    EXPECT_EQ(fresh.preexisting_segments, 0u);
    EXPECT_EQ(fresh.skipped_events, 0u);
    EXPECT_FALSE(fresh.oom_at_event);
    testing::expect_same_figures(fresh, expected);
    EXPECT_LT(fresh.requested_peak, adopted.requested_peak);
  }
}

TEST_F(FromEmptyPool, ChangesNothingForATraceThatStartsEmpty) {
  ReplayOptions options;
  options.trace_path = testing::imported_trace("gpt2_train.default");
  const ReplayMetrics plain = run_replay(options);
  options.from_empty_pool = true;
  const ReplayMetrics fresh = run_replay(options);
  testing::expect_same_figures(fresh, plain);
  EXPECT_EQ(fresh.events, plain.events);
}

// A live recording that began after an earlier test left memory cached: the run's blocks lie in
// the starting pool's segments, which the replay leaves out; the pool check (live traces have it)
// must still know those segments, and the replay is the one of the run's blocks alone.
TEST_F(FromEmptyPool, RunsBlocksInTheStartingPoolsCachedSegments) {
  constexpr uint64_t kBase = 0x7f0000000000, kOther = 0x7f1000000000, kMiB = 1 << 20;
  // The live recording, or (expected) the run's own events alone in a trace without pool checks.
  const auto write = [&](const std::string& name, bool live) {
    proto::TraceHeader header;
    header.set_source(live ? "pytorch-live" : "pytorch-snapshot");
    header.set_starts_mid_run(live);
    const std::string trace = path(name);
    TraceWriter writer(trace);
    writer.begin(header);
    uint64_t time = 0;
    const auto add = [&](EventKind kind, uint64_t address, uint64_t size, uint32_t flags = 0) {
      Event e;
      e.kind = kind;
      e.address = address;
      e.size = size;
      e.flags = flags;
      e.time_ns = ++time;
      if (live || flags == 0) writer.append(e);
    };
    add(EventKind::segment_alloc, kBase, 64 * kMiB, kPreexisting);  // an earlier test's, cached
    add(EventKind::alloc, kBase, 16 * kMiB, kPreexisting);  // still live
    add(EventKind::segment_alloc, kOther, 20 * kMiB);  // the run's own segment
    add(EventKind::alloc, kOther, 20 * kMiB);
    add(EventKind::alloc, kBase + 16 * kMiB, 24 * kMiB);  // the run's, in the cached part
    add(EventKind::alloc, kBase + 40 * kMiB, 8 * kMiB);
    add(EventKind::free_completed, kBase + 16 * kMiB, 24 * kMiB);
    if (live) add(EventKind::free_completed, kBase, 16 * kMiB);
    add(EventKind::free_completed, kBase + 40 * kMiB, 8 * kMiB);
    add(EventKind::free_completed, kOther, 20 * kMiB);
    writer.finish();
    return trace;
  };
  ReplayOptions options;
  options.trace_path = write("after_cached_memory.mrt", true);
  options.from_empty_pool = true;
  const ReplayMetrics fresh = run_replay(options);
  EXPECT_EQ(fresh.skipped_events, 0u);
  EXPECT_EQ(fresh.requested_peak, 52 * kMiB);
  ReplayOptions expected = options;
  expected.trace_path = write("run_alone.mrt", false);
  expected.from_empty_pool = false;
  testing::expect_same_figures(fresh, run_replay(expected));
}

}  // namespace
}  // namespace memreplay
