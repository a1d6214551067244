// The importer's state passes (initial-state rebuild, pool assignment, empty_cache inference)
// report the entries they are done with in windows (TraceWindowDone), so that a trace held in
// scratch files stays a window in memory. Checked on a real trace, repeated at shifted addresses
// until it spans several windows: the windows tile what the pass left behind, in its direction,
// and the results are the same with and without them.
#include <gtest/gtest.h>

#include <algorithm>
#include <span>
#include <utility>
#include <vector>

#include "proto/trace_sink.h"
#include "recorder/import/pytorch/allocator_state.h"
#include "recorder/import/pytorch/empty_cache_inference.h"
#include "recorder/import/pytorch/pool_assignment.h"
#include "recorder/import/pytorch/pytorch_snapshot_importer.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

// vit_infer_varbatch.emptycache's trace (it starts from an empty allocator, releases segments and
// calls empty_cache five times) as TraceSteps, `copies` times, copy k shifted by k * span.
std::vector<TraceStep> repeated_real_trace(size_t copies) {
  CollectingSink sink;
  import_pytorch_snapshot(testing::real_data_path("traces/vit_infer_varbatch.emptycache.pickle.xz").string(), sink);
  std::vector<TraceStep> one;
  uint64_t span = 0;
  for (const Event& e : sink.events) {
    if (e.kind == EventKind::annotation || e.kind == EventKind::empty_cache) continue;
    one.push_back({e.address, e.size, static_cast<uint32_t>(e.stream), e.kind});
    span = std::max(span, e.address + e.size);
  }
  std::vector<TraceStep> trace;
  for (size_t k = 0; k < copies; ++k)
    for (TraceStep s : one) {
      s.address += k * span;
      trace.push_back(s);
    }
  return trace;
}

// Records the windows a pass reports.
struct Windows {
  std::vector<std::pair<size_t, size_t>> seen;
  TraceWindowDone done() {
    return [this](size_t begin, size_t end) { seen.emplace_back(begin, end); };
  }
  // The windows follow each other without gap or overlap, first to last (forward) or last to
  // first (backward), and cover all but the last window or so the pass read.
  void expect_tiling(size_t entries, bool forward) const {
    ASSERT_FALSE(seen.empty());
    for (size_t i = 0; i < seen.size(); ++i) {
      EXPECT_LT(seen[i].first, seen[i].second);
      if (i > 0 && forward) EXPECT_EQ(seen[i].first, seen[i - 1].second);
      if (i > 0 && !forward) EXPECT_EQ(seen[i].second, seen[i - 1].first);
    }
    const size_t covered_from = forward ? seen.front().first : seen.back().first;
    const size_t covered_to = forward ? seen.back().second : seen.front().second;
    EXPECT_EQ(forward ? covered_from : covered_to, forward ? 0 : entries);
    EXPECT_GE(covered_to - covered_from + 2 * kTraceWindowEntries, entries);
  }
};

class PassWindows : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { trace_ = new std::vector<TraceStep>(repeated_real_trace(6)); }
  static void TearDownTestSuite() { delete trace_; }
  static const std::vector<TraceStep>& trace() { return *trace_; }
  static std::vector<TraceStep>* trace_;
};
std::vector<TraceStep>* PassWindows::trace_ = nullptr;

TEST_F(PassWindows, TheTraceSpansSeveralWindows) { EXPECT_GT(trace().size(), 2 * kTraceWindowEntries); }

// The runs read as empty_cache calls.
std::vector<size_t> empty_caches(const std::vector<ReleaseRun>& runs) {
  std::vector<size_t> firsts;
  for (const ReleaseRun& r : runs)
    if (r.empty_cache) firsts.push_back(r.first);
  return firsts;
}

TEST_F(PassWindows, EmptyCacheInferenceIsTheSameAndWindowed) {
  const std::vector<ReleaseRun> plain = infer_empty_cache({}, trace());
  // The first copy's five empty_cache calls at least (later copies start with the earlier copies'
  // segments still there, so rule 1 does not always hold for them).
  ASSERT_GE(empty_caches(plain).size(), 5u);
  const size_t one_copy = trace().size() / 6;
  const std::vector<ReleaseRun> single = infer_empty_cache({}, std::span(trace()).first(one_copy));
  ASSERT_EQ(empty_caches(single).size(), 5u);
  EXPECT_TRUE(std::equal(single.begin(), single.end(), plain.begin()));
  Windows windows;
  EXPECT_EQ(infer_empty_cache({}, trace(), nullptr, windows.done()), plain);
  // Two whole forward passes (the reserved peak, the inference), each tiling from 0; the look for
  // a release stops at the trace's first one, inside the first window.
  ASSERT_FALSE(windows.seen.empty());
  size_t starts = 0;
  for (const auto& w : windows.seen) starts += w.first == 0;
  EXPECT_EQ(starts, 2u);
  EXPECT_EQ(windows.seen.back().second + 2 * kTraceWindowEntries > trace().size(), true);
}

TEST_F(PassWindows, InitialStateRebuildIsTheSameAndWindowed) {
  // A final state that has the last copy's segments live: undone, they vanish again.
  AllocatorState final_state;
  for (const TraceStep& s : trace())
    if (s.kind == EventKind::segment_alloc) final_state.segments.push_back({s.address, s.size, s.stream});
  const AllocatorState plain = rebuild_initial_state(final_state, trace());
  Windows windows;
  const AllocatorState windowed = rebuild_initial_state(final_state, trace(), windows.done());
  EXPECT_EQ(windowed.segments, plain.segments);
  EXPECT_EQ(windowed.blocks, plain.blocks);
  windows.expect_tiling(trace().size(), /*forward=*/false);
}

TEST_F(PassWindows, PoolAssignmentIsTheSameAndWindowed) {
  // Every other final segment in a private pool, so that the pass runs.
  AllocatorState final_state;
  uint16_t pool = 0;
  for (const TraceStep& s : trace())
    if (s.kind == EventKind::segment_alloc) {
      SegmentState seg{s.address, s.size, s.stream};
      seg.pool = (pool++ % 2 == 0) ? uint16_t{1} : kDefaultPool;
      final_state.segments.push_back(seg);
    }
  std::sort(final_state.segments.begin(), final_state.segments.end(),
            [](const SegmentState& a, const SegmentState& b) { return a.address < b.address; });
  final_state.segments.erase(
      std::unique(final_state.segments.begin(), final_state.segments.end(),
                  [](const SegmentState& a, const SegmentState& b) { return a.address == b.address; }),
      final_state.segments.end());
  const std::vector<uint16_t> plain = assign_pools(final_state, trace());
  EXPECT_TRUE(std::count(plain.begin(), plain.end(), uint16_t{1}) > 0);
  Windows windows;
  EXPECT_EQ(assign_pools(final_state, trace(), nullptr, windows.done()), plain);
  windows.expect_tiling(trace().size(), /*forward=*/false);
}

}  // namespace
}  // namespace memreplay
