// IntervalSet (policies/detail/interval_set.h), the one insert-and-merge routine of the device's
// mapped pages, the memreplay policy's arena and the driver address model's free VA: inserts merge
// with the neighbours they touch and refuse overlaps; erases cut a piece out of the range holding
// it and refuse what no one range holds; checked against a page-by-page reference.
#include "policies/detail/interval_set.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <utility>
#include <vector>

namespace memreplay::detail {
namespace {

std::vector<std::pair<uint64_t, uint64_t>> ranges_of(const IntervalSet& set) { return {set.begin(), set.end()}; }

TEST(IntervalSet, MergesTouchingNeighboursAndRefusesOverlaps) {
  IntervalSet set;
  EXPECT_TRUE(set.insert(10, 20));
  EXPECT_TRUE(set.insert(30, 40));
  EXPECT_TRUE(set.insert(20, 30));  // joins both
  EXPECT_EQ(ranges_of(set), (std::vector<std::pair<uint64_t, uint64_t>>{{10, 40}}));
  EXPECT_FALSE(set.insert(35, 45));
  EXPECT_FALSE(set.insert(5, 11));
  EXPECT_FALSE(set.insert(0, 100));
  EXPECT_EQ(ranges_of(set), (std::vector<std::pair<uint64_t, uint64_t>>{{10, 40}}));
  EXPECT_TRUE(set.holds(12, 40));
  EXPECT_FALSE(set.holds(5, 12));
}

TEST(IntervalSet, ErasesCutPiecesOutOfTheRangeHoldingThem) {
  IntervalSet set;
  set.insert(0, 100);
  EXPECT_TRUE(set.erase(40, 60));
  EXPECT_EQ(ranges_of(set), (std::vector<std::pair<uint64_t, uint64_t>>{{0, 40}, {60, 100}}));
  EXPECT_FALSE(set.erase(30, 70)) << "spans the hole";
  EXPECT_FALSE(set.erase(100, 110));
  EXPECT_TRUE(set.erase(0, 40));
  EXPECT_TRUE(set.erase(90, 100));
  EXPECT_EQ(ranges_of(set), (std::vector<std::pair<uint64_t, uint64_t>>{{60, 90}}));
}

TEST(IntervalSet, AgreesWithAPageByPageReference) {
  std::mt19937_64 rng(42);
  IntervalSet set;
  std::set<uint64_t> pages;
  for (int step = 0; step < 20000; ++step) {
    const uint64_t start = rng() % 200;
    const uint64_t end = start + 1 + rng() % 8;
    bool any = false;
    bool all = true;
    for (uint64_t p = start; p < end; ++p) {
      const bool in = pages.contains(p);
      any = any || in;
      all = all && in;
    }
    if (rng() % 2 == 0) {
      ASSERT_EQ(set.insert(start, end), !any) << step;
      if (!any)
        for (uint64_t p = start; p < end; ++p) pages.insert(p);
    } else {
      // Held by one range: every page is in, and the reference has no gap there.
      ASSERT_EQ(set.holds(start, end), all) << step;
      ASSERT_EQ(set.erase(start, end), all) << step;
      if (all)
        for (uint64_t p = start; p < end; ++p) pages.erase(p);
    }
    // The set is the reference's runs, merged.
    std::vector<std::pair<uint64_t, uint64_t>> runs;
    for (const uint64_t p : pages) {
      if (!runs.empty() && runs.back().second == p)
        ++runs.back().second;
      else
        runs.emplace_back(p, p + 1);
    }
    ASSERT_EQ(ranges_of(set), runs) << step;
  }
}

}  // namespace
}  // namespace memreplay::detail
