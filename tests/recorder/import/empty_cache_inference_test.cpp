// The empty_cache inference (empty_cache_inference.h) with private pools: a run of segment frees
// is an empty_cache when it releases every entirely free segment of the default pool (a CUDA
// graph's pool keeps its free segments while the graph lives), and a run that a capture's first
// segment follows is the empty_cache torch.cuda.graph() runs before capturing, not a retry.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "recorder/import/pytorch/empty_cache_inference.h"

namespace memreplay {
namespace {

constexpr uint64_t kMiB = 1 << 20;

TraceStep step(EventKind kind, uint64_t address, uint64_t size) { return {address, size, 0, kind}; }

// The first entries of the runs read as empty_cache calls.
std::vector<size_t> empty_caches(const std::vector<ReleaseRun>& runs) {
  std::vector<size_t> firsts;
  for (const ReleaseRun& r : runs)
    if (r.empty_cache) firsts.push_back(r.first);
  return firsts;
}

// A capture's pool (pool 1) holds a 20 MiB segment whose only block was a temporary freed inside
// the capture; eager work then fills and frees a default-pool segment; the next capture's
// empty_cache releases the default segment only.
struct GraphThenEagerThenCapture {
  std::vector<TraceStep> trace = {
      step(EventKind::segment_alloc, 100 * kMiB, 20 * kMiB),  // 0: the capture's temporary
      step(EventKind::alloc, 100 * kMiB, 20 * kMiB),
      step(EventKind::free_requested, 100 * kMiB, 20 * kMiB),
      step(EventKind::free_completed, 100 * kMiB, 20 * kMiB),
      step(EventKind::segment_alloc, 200 * kMiB, 8 * kMiB),  // 4: eager work, default pool
      step(EventKind::alloc, 200 * kMiB, 8 * kMiB),
      step(EventKind::free_requested, 200 * kMiB, 8 * kMiB),
      step(EventKind::free_completed, 200 * kMiB, 8 * kMiB),
      step(EventKind::segment_free, 200 * kMiB, 8 * kMiB),  // 8: the next capture's empty_cache
      step(EventKind::segment_alloc, 300 * kMiB, 4 * kMiB),  // the next capture, pool 1
      step(EventKind::alloc, 300 * kMiB, 4 * kMiB),
  };
  std::vector<uint16_t> pools = {1, 1, 1, 1, 0, 0, 0, 0, 0, 1, 1};
};

// GIVEN a graph pool's entirely free segment that a burst leaves in place, WHEN the entries' pools
// are known, THEN the burst that releases every free default-pool segment is an empty_cache.
TEST(EmptyCacheInferenceWithPools, AGraphPoolsFreeSegmentDoesNotHideTheEmptyCache) {
  const GraphThenEagerThenCapture job;
  EXPECT_EQ(empty_caches(infer_empty_cache({}, job.trace, nullptr, {}, job.pools)), std::vector<size_t>{8});
}

// GIVEN the same trace read as if every segment were in the default pool, THEN the burst leaves a
// free segment in place and is not an empty_cache: the pools are what tell it.
TEST(EmptyCacheInferenceWithPools, WithoutPoolsTheSameBurstIsNotAnEmptyCache) {
  const GraphThenEagerThenCapture job;
  EXPECT_TRUE(empty_caches(infer_empty_cache({}, job.trace)).empty());
}

// GIVEN a free default-pool segment the burst leaves in place, THEN it is not an empty_cache
// (garbage collection and release_available_cached_blocks release only some).
TEST(EmptyCacheInferenceWithPools, AFreeDefaultSegmentLeftInPlaceStillRefutesIt) {
  GraphThenEagerThenCapture job;
  job.pools[0] = job.pools[1] = job.pools[2] = job.pools[3] = 0;
  EXPECT_TRUE(empty_caches(infer_empty_cache({}, job.trace, nullptr, {}, job.pools)).empty());
}

// Warm-up eager work reaches the reserved peak (a 16 MiB and an 8 MiB segment) and drops the
// 8 MiB tensor; the graph's static input is allocated last, so torch.cuda.graph()'s empty_cache
// comes right after an alloc, at the peak, and the capture's first segment (pool 1) follows at once.
struct CaptureAtThePeak {
  std::vector<TraceStep> trace = {
      step(EventKind::segment_alloc, 100 * kMiB, 16 * kMiB),  // 0: warm-up
      step(EventKind::alloc, 100 * kMiB, 8 * kMiB),
      step(EventKind::segment_alloc, 200 * kMiB, 8 * kMiB),
      step(EventKind::alloc, 200 * kMiB, 8 * kMiB),
      step(EventKind::free_requested, 200 * kMiB, 8 * kMiB),
      step(EventKind::free_completed, 200 * kMiB, 8 * kMiB),
      step(EventKind::alloc, 108 * kMiB, 4 * kMiB),  // 6: the graph's static input: no free last
      step(EventKind::segment_free, 200 * kMiB, 8 * kMiB),  // 7: the capture's empty_cache
      step(EventKind::segment_alloc, 300 * kMiB, 10 * kMiB),  // 8: the capture's first segment
      step(EventKind::alloc, 300 * kMiB, 10 * kMiB),
  };
  std::vector<uint16_t> pools = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1};
};

// GIVEN a run at the reserved peak, after no free, that the first segment of a private pool
// follows, THEN it is the capture's empty_cache, settled (no cap can make it a retry).
TEST(EmptyCacheInferenceWithPools, ARunThatACapturesFirstSegmentFollowsIsItsEmptyCache) {
  const CaptureAtThePeak job;
  const std::vector<ReleaseRun> runs = infer_empty_cache({}, job.trace, nullptr, {}, job.pools);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].first, 7u);
  EXPECT_TRUE(runs[0].empty_cache);
  EXPECT_FALSE(runs[0].open());
}

// GIVEN the same run followed by a default-pool segment (no capture), THEN rule 3 reads it as a
// release-and-retry, left open for a sink that knows the cap.
TEST(EmptyCacheInferenceWithPools, TheSameRunBeforeADefaultPoolSegmentIsReadAsARetry) {
  CaptureAtThePeak job;
  job.pools.assign(job.pools.size(), 0);
  const std::vector<ReleaseRun> runs = infer_empty_cache({}, job.trace, nullptr, {}, job.pools);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_FALSE(runs[0].empty_cache);
  EXPECT_TRUE(runs[0].open());
}

}  // namespace
}  // namespace memreplay
