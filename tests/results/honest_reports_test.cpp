// Truncated (ring-buffer) and interposed traces reported honestly:
// `info` counts the recorded actions exactly and lists the rebuilt starting state apart,
// `validate` passes on our import of a truncated snapshot, no metric is taken between adopted
// segments and adopted blocks, and a device call that failed never becomes a live allocation.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "proto/trace_reader.h"
#include "proto/trace_writer.h"
#include "replayer/replay_runner.h"
#include "replayer/trace_summary.h"
#include "replayer/trace_validator.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

using nlohmann::json;
using testing::imported_trace;
using testing::read_json;
using testing::real_data_path;

DeviceSummary summarize(const std::vector<Event>& events) {
  TraceSummarizer summarizer;
  summarizer.add(events, 0);
  summarizer.start_second_pass();
  summarizer.add(events, 0);
  auto devices = summarizer.finish();
  EXPECT_EQ(devices.size(), 1u);
  return devices.empty() ? DeviceSummary{} : devices[0];
}

TEST(TruncatedTrace, InfoCountsTheSnapshotsOwnEntriesAndTheStartingStateApart) {
  const json run = read_json(real_data_path("groundtruth/runs/gpt2_train.truncated.json"));
  const auto events = TraceReader::read_all(imported_trace("gpt2_train.truncated"));
  const DeviceSummary d = summarize(events);
  // The snapshot's external_annotations are recorded too, but are not trace entries.
  auto entries = d.events_per_kind;
  EXPECT_EQ(entries.erase("annotation"), 1u);
  EXPECT_EQ(entries, (run["actions"].get<std::map<std::string, uint64_t>>()));
  // The ring buffer kept 20,000 entries; the state at the first of them is rebuilt, not recorded.
  uint64_t recorded = 0;
  for (const auto& [_, n] : entries) recorded += n;
  EXPECT_EQ(recorded, run["trace_entries"].get<uint64_t>());
  EXPECT_GT(d.starting_state.segments, 0u);
  EXPECT_GT(d.starting_state.blocks, 0u);
  EXPECT_GT(d.starting_state.segment_bytes, d.starting_state.block_bytes);
}

TEST(TruncatedTrace, ValidatePassesOnOurImport) {
  TraceValidator validator;
  validator.add(TraceReader::read_all(imported_trace("gpt2_train.truncated")), 0);
  EXPECT_EQ(validator.problem_count(), 0u) << (validator.problems().empty() ? "" : validator.problems()[0].message);
}

// Adopted segments come before the blocks adopted into them: measured in between, fragmentation
// at the reserved peak read 100%. The peak is taken once the starting state is whole.
TEST(TruncatedTrace, NoMetricBetweenAdoptedSegmentsAndTheirBlocks) {
  ReplayOptions request;
  request.trace_path = imported_trace("gpt2_train.truncated");
  const ReplayMetrics m = run_replay(request);
  EXPECT_LT(m.fragmentation_at_peak, 0.9);
  EXPECT_GT(m.fragmentation_at_peak, 0.0);
  for (const auto& point : m.timeline) EXPECT_GE(point.reserved, point.allocated);
}

// A failing 2 TiB cudaMalloc recorded by the interposer (kFailed, aux = the error code) between two
// real allocations: nothing of it is live, in info, validate or a replay.
class InterposedTrace : public testing::TempDirTest {};

TEST_F(InterposedTrace, AFailedDeviceCallIsNeverALiveAllocation) {
  const std::string trace = path("failed.mrt");
  {
    TraceWriter writer(trace);
    proto::TraceHeader header;
    header.set_source("cuda-interposer");
    writer.begin(header);
    writer.append(Event{.kind = EventKind::alloc, .time_ns = 1, .address = 0x1000'0000, .size = 1 << 20});
    writer.append(Event{
        .kind = EventKind::alloc, .time_ns = 2, .address = 0, .size = uint64_t{2} << 40, .flags = kFailed, .aux = 2});
    writer.append(Event{.kind = EventKind::alloc, .time_ns = 3, .address = 0x2000'0000, .size = 2 << 20});
    writer.append(Event{.kind = EventKind::free_completed, .time_ns = 4, .address = 0x1000'0000});
    writer.finish();
  }
  const auto events = TraceReader::read_all(trace);
  const DeviceSummary d = summarize(events);
  EXPECT_EQ(d.peak_requested_bytes, uint64_t{3} << 20);
  EXPECT_EQ(d.events_per_kind.at("alloc"), 2u);
  EXPECT_EQ(d.failed_per_kind.at("alloc"), 1u);

  TraceValidator validator;
  validator.add(events, 0);
  EXPECT_EQ(validator.problem_count(), 0u);

  for (const char* policy : {"pytorch", "passthrough", "cuda_async"}) {
    ReplayOptions request;
    request.trace_path = trace;
    request.policy_spec = policy;
    const ReplayMetrics m = run_replay(request);
    EXPECT_FALSE(m.oom_at_event.has_value()) << policy;
    EXPECT_EQ(m.requested_peak, uint64_t{3} << 20) << policy;
    EXPECT_EQ(m.events, 3u) << policy;
  }
}

// A framework whose allocator suballocates (CuPy's pool, JAX's BFC) shows the interposer its
// segments only: info says the program's allocations are not in the trace. A failed allocation is
// no allocation of it; a PyTorch import and an interposed run of per-buffer calls have them.
TEST_F(InterposedTrace, SegmentsWithoutAllocationsAreSaidToHideTheProgramsAllocations) {
  std::vector<Event> segments_only = {
      Event{.kind = EventKind::segment_alloc, .time_ns = 1, .address = 0x1000'0000, .size = 32 << 20},
      Event{.kind = EventKind::alloc, .time_ns = 2, .address = 0, .size = 1 << 20, .flags = kFailed, .aux = 2},
      Event{.kind = EventKind::segment_free, .time_ns = 3, .address = 0x1000'0000, .size = 32 << 20}};
  EXPECT_FALSE(summarize(segments_only).allocations_visible());

  std::vector<Event> per_buffer = segments_only;
  per_buffer[1] = Event{.kind = EventKind::alloc, .time_ns = 2, .address = 0x2000'0000, .size = 1 << 20};
  EXPECT_TRUE(summarize(per_buffer).allocations_visible());
  EXPECT_TRUE(DeviceSummary{}.allocations_visible());  // nothing recorded hides nothing
  EXPECT_TRUE(summarize(TraceReader::read_all(imported_trace("multistream_pipeline.default"))).allocations_visible());
}

}  // namespace
}  // namespace memreplay
