// The offline floor (replayer/bound/offline_bound.h): live peak and greedy-by-size placement on
// hand-made lifetimes, a valid placement on a real trace, the MiniMalloc export, and the CLI.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <random>
#include <unistd.h>

#include "proto/input_error.h"
#include "replayer/bound/offline_bound.h"
#include "replayer/replay_runner.h"
#include "tests/test_support.h"

namespace memreplay {
namespace {

TEST(OfflineBound, GreedyBySizeFillsTheGapsOfLargerBlocks) {
  // GIVEN  A [0,10) 100 B, B [0,4) 60 B, C [5,10) 60 B, D [4,6) 30 B
  //        (live peak 190: A + C + D at time 5)
  const std::vector<Lifetime> blocks = {{0, 0, 10, 100}, {1, 0, 4, 60}, {2, 5, 10, 60}, {3, 4, 6, 30}};
  // WHEN   placed largest first at the lowest free offset over each lifetime
  std::vector<uint64_t> offsets;
  const uint64_t footprint = greedy_by_size(blocks, 1, &offsets);
  // THEN   A at 0; B at 100; C at 100 (B is dead by then); D collides with A and C: at 160
  EXPECT_EQ(live_peak(blocks), 190u);
  EXPECT_EQ(offsets, (std::vector<uint64_t>{0, 100, 100, 160}));
  EXPECT_EQ(footprint, 190u);
  // Rounded to 512 bytes every block takes 512.
  EXPECT_EQ(live_peak(blocks, 512), 3u * 512);
  EXPECT_EQ(greedy_by_size(blocks, 512), 3u * 512);
}

TEST(OfflineBound, RandomLifetimesGetAValidPlacementNoSmallerThanThePeak) {
  std::mt19937_64 rng(11);
  for (int round = 0; round < 50; ++round) {
    std::vector<Lifetime> blocks;
    for (uint64_t id = 0; id < 40; ++id) {
      const uint64_t lower = rng() % 100;
      blocks.push_back({id, lower, lower + 1 + rng() % 30, 1 + rng() % 1000});
    }
    std::vector<uint64_t> offsets;
    const uint64_t footprint = greedy_by_size(blocks, 1, &offsets);
    EXPECT_GE(footprint, live_peak(blocks));
    for (size_t i = 0; i < blocks.size(); ++i)
      for (size_t j = i + 1; j < blocks.size(); ++j) {
        const bool together = blocks[i].lower < blocks[j].upper && blocks[j].lower < blocks[i].upper;
        const bool apart = offsets[i] + blocks[i].size <= offsets[j] || offsets[j] + blocks[j].size <= offsets[i];
        ASSERT_TRUE(!together || apart) << "round " << round << ": blocks " << i << " and " << j;
      }
  }
}

// Every pair of blocks alive at once is disjoint in the placement, on a real trace.
TEST(OfflineBound, PlacementOfARealTraceIsValidAndNotBelowTheRequestedPeak) {
  const std::string trace = testing::imported_trace("vit_infer_varbatch.default");
  const auto blocks = read_lifetimes(trace);
  std::vector<uint64_t> offsets;
  const uint64_t footprint = greedy_by_size(blocks, 512, &offsets);
  ASSERT_EQ(offsets.size(), blocks.size());
  // Sweep in time; at each alloc, check the new block against the live ones.
  std::vector<size_t> by_lower(blocks.size());
  for (size_t i = 0; i < by_lower.size(); ++i) by_lower[i] = i;
  std::sort(by_lower.begin(), by_lower.end(), [&](size_t a, size_t b) { return blocks[a].lower < blocks[b].lower; });
  std::map<uint64_t, size_t> live;  // offset -> block
  for (const size_t i : by_lower) {
    for (auto it = live.begin(); it != live.end();) it = blocks[it->second].upper <= blocks[i].lower ? live.erase(it) : std::next(it);
    const uint64_t start = offsets[i];
    const uint64_t end = start + (blocks[i].size + 511) / 512 * 512;
    auto next = live.lower_bound(start);
    if (next != live.end()) ASSERT_GE(next->first, end) << "block " << i;
    if (next != live.begin()) {
      const size_t previous = std::prev(next)->second;
      ASSERT_LE(offsets[previous] + (blocks[previous].size + 511) / 512 * 512, start) << "block " << i;
    }
    live.emplace(start, i);
  }
  ReplayOptions options;
  options.trace_path = trace;
  const ReplayMetrics replay = run_replay(options);
  EXPECT_EQ(live_peak(blocks), replay.requested_peak);
  EXPECT_GE(footprint, live_peak(blocks, 512));
  EXPECT_LT(footprint, replay.reserved_peak) << "the omniscient placement beats PyTorch's allocator";
}

TEST(OfflineBound, MiniMallocCsvHasOneRowPerBlock) {
  const std::string trace = testing::imported_trace("multistream_pipeline.default");
  const auto blocks = read_lifetimes(trace);
  const std::string csv = (std::filesystem::temp_directory_path() / ("bound_" + std::to_string(getpid()) + ".csv")).string();
  write_minimalloc_csv(blocks, csv);
  std::ifstream in(csv);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "id,lower,upper,size");
  size_t rows = 0;
  while (std::getline(in, line)) ++rows;
  EXPECT_EQ(rows, blocks.size());
  EXPECT_EQ(blocks.size(), 546u);  // the trace's allocations
  std::filesystem::remove(csv);
  EXPECT_THROW(write_minimalloc_csv(blocks, "/nonexistent/dir/x.csv"), InputError);
  EXPECT_FALSE(std::filesystem::exists("/nonexistent/dir/x.csv.tmp"));
}

}  // namespace
}  // namespace memreplay
