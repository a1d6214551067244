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

namespace memreplay {
namespace {

class FromEmptyPool : public testing::TempDirTest {
 protected:
  // The trace without its starting state: what from_empty_pool must replay.
  std::string without_starting_state(const std::string& trace) {
    const std::string out = path("without_starting_state.mrt");
    TraceReader reader(trace);
    proto::TraceHeader header = reader.header();
    header.set_starts_mid_run(false);
    TraceWriter writer(out);
    writer.begin(header);
    std::unordered_set<uint64_t> left_out;  // blocks live at the start, until freed
    std::vector<Event> batch;
    while (reader.next_batch(batch))
      for (const Event& e : batch) {
        if (e.has_flag(kPreexisting)) {
          if (e.kind == EventKind::alloc && e.size != 0) left_out.insert(e.address);
          continue;
        }
        if ((e.kind == EventKind::free_requested || e.kind == EventKind::free_completed) &&
            left_out.contains(e.address)) {
          if (e.kind == EventKind::free_completed) left_out.erase(e.address);
          continue;
        }
        Event copy = e;
        copy.stack = 0;  // (the replay does not read stacks)
        if (e.kind == EventKind::annotation)
          writer.append_annotation(copy, reader.annotation(e));
        else
          writer.append(copy);
      }
    writer.finish();
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

}  // namespace
}  // namespace memreplay
