// The offline floor (replayer/bound/offline_bound.h): live peak and greedy-by-size placement on
// hand-made lifetimes, a valid placement on a real trace, the MiniMalloc export, and the CLI.
#include <gtest/gtest.h>

#include <unistd.h>
#include <fstream>
#include <map>
#include <random>

#include "proto/input_error.h"
#include "replayer/bound/offline_bound.h"
#include "replayer/replay_runner.h"
#include "tests/support/test_support.h"

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

// Greedy by size as first written: every placed block whose life overlaps, sorted by offset, and
// the first gap of `size` bytes. The placement's index must give these offsets exactly.
std::vector<uint64_t> sorted_scan_offsets(const std::vector<Lifetime>& blocks, uint64_t rounding) {
  std::vector<size_t> order(blocks.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (blocks[a].size != blocks[b].size) return blocks[a].size > blocks[b].size;
    return blocks[a].upper - blocks[a].lower > blocks[b].upper - blocks[b].lower;
  });
  const auto rounded = [&](size_t i) { return (blocks[i].size + rounding - 1) / rounding * rounding; };
  std::vector<uint64_t> offsets(blocks.size(), 0);
  std::vector<size_t> placed;
  std::vector<std::pair<uint64_t, uint64_t>> taken;
  for (const size_t i : order) {
    taken.clear();
    for (const size_t j : placed)
      if (blocks[j].lower < blocks[i].upper && blocks[i].lower < blocks[j].upper)
        taken.emplace_back(offsets[j], offsets[j] + rounded(j));
    std::sort(taken.begin(), taken.end());
    uint64_t at = 0;
    for (const auto& [start, stop] : taken) {
      if (start >= at + rounded(i)) break;
      at = std::max(at, stop);
    }
    offsets[i] = at;
    placed.push_back(i);
  }
  return offsets;
}

TEST(OfflineBound, PlacementIndexGivesTheOffsetsOfTheSortedScanOnRandomLifetimes) {
  // Few distinct sizes and times, so that ties, touching lifetimes and adjacent ranges are common.
  std::mt19937_64 rng(1111);
  for (int round = 0; round < 200; ++round) {
    std::vector<Lifetime> blocks;
    const uint64_t span = 1 + rng() % 60;
    for (uint64_t id = 0; id < 1 + rng() % 120; ++id) {
      const uint64_t lower = rng() % span;
      blocks.push_back({id, lower, lower + 1 + rng() % (1 + rng() % span), 1 + (rng() % 8) * (1 + rng() % 700)});
    }
    for (const uint64_t rounding : {uint64_t{1}, uint64_t{512}}) {
      std::vector<uint64_t> offsets;
      greedy_by_size(blocks, rounding, &offsets);
      ASSERT_EQ(offsets, sorted_scan_offsets(blocks, rounding)) << "round " << round << ", rounding " << rounding;
    }
  }
}

TEST(OfflineBound, PlacementIndexGivesTheOffsetsOfTheSortedScanOnARealTrace) {
  const auto blocks = read_lifetimes(testing::imported_trace("vit_infer_varbatch.default"));
  ASSERT_EQ(blocks.size(), 13714u);
  for (const uint64_t rounding : {uint64_t{1}, uint64_t{512}}) {
    std::vector<uint64_t> offsets;
    greedy_by_size(blocks, rounding, &offsets);
    EXPECT_EQ(offsets, sorted_scan_offsets(blocks, rounding)) << "rounding " << rounding;
  }
}

// The bound of every real trace, as the sorted scan computed it before the placement index:
// the faster index changed no byte.
TEST(OfflineBound, SharedTracesKeepTheirPlacementFootprints) {
  struct Row {
    const char* trace;
    uint64_t requested_peak;
    uint64_t greedy_requested;
    uint64_t greedy_rounded;
  };
  const Row rows[] = {
      {"gpt2_generate.default", 1040812880, 1107996480, 1107998208},
      {"gpt2_train.capped", 7701353160, 7701353160, 7701366272},
      {"gpt2_train.default", 7701353160, 7701353160, 7701366272},
      {"gpt2_train.stacks", 7701353160, 7701353160, 7701366272},
      {"gpt2_train.truncated", 7701353160, 7701353160, 7701366272},
      {"multistream_pipeline.default", 468402176, 468402176, 468402176},
      {"resnet50_train.default", 3192592912, 3192592912, 3192635904},
      {"vit_infer_varbatch.default", 1042736032, 1042736032, 1042736128},
      {"vit_infer_varbatch.emptycache", 1042736032, 1042736032, 1042736128},
  };
  for (const Row& row : rows) {
    const OfflineBound bound = compute_bound(read_lifetimes(testing::imported_trace(row.trace)));
    EXPECT_EQ(bound.requested_peak, row.requested_peak) << row.trace;
    EXPECT_EQ(bound.greedy_requested, row.greedy_requested) << row.trace;
    EXPECT_EQ(bound.greedy_rounded, row.greedy_rounded) << row.trace;
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
    for (auto it = live.begin(); it != live.end();)
      it = blocks[it->second].upper <= blocks[i].lower ? live.erase(it) : std::next(it);
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
  const std::string csv =
      (std::filesystem::temp_directory_path() / ("bound_" + std::to_string(getpid()) + ".csv")).string();
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
