// The greedy schedule behind tests/support/growth_bound.h (the argument and its proof are
// there), on curves small enough to count by hand. The bound per shared trace is printed by
// tests/memreplay_policy_test.cpp beside PyTorch default's calls and memreplay's.
#include <gtest/gtest.h>

#include <vector>

#include "base/units.h"
#include "tests/support/growth_bound.h"

namespace memreplay {
namespace {

using testing::live_curve;
using testing::min_growth_calls;

TEST(GrowthBound, GrowingByMoreThanTwoPercentPerStepCostsOneCallPerStep) {
  // GIVEN live bytes that rise 3% at a time, THEN every step needs a call of its own.
  std::vector<uint64_t> rising{100 * kMiB};
  for (int i = 0; i < 9; ++i) rising.push_back(rising.back() * 103 / 100);
  EXPECT_EQ(min_growth_calls(rising), 10u);
  // GIVEN steps of 1%, THEN the first call maps 1.02 x 100: it holds 101 and 102, 103 needs another.
  EXPECT_EQ(min_growth_calls({100 * kMiB, 101 * kMiB, 102 * kMiB, 103 * kMiB}), 2u);
}

TEST(GrowthBound, FallingAndRisingBelowTheHighWaterMarkCostsNothing) {
  // The limit follows the highest live bytes so far: a dip and a return stay within what is mapped.
  EXPECT_EQ(min_growth_calls({0, 500 * kMiB, 10 * kMiB, 505 * kMiB, 0, 510 * kMiB}), 1u);
  EXPECT_EQ(min_growth_calls({0, 0}), 0u);
}

TEST(GrowthBound, TheLiveCurveSumsEveryBlockLiveAfterEachEvent) {
  // Two blocks live from the start (a ring-buffer trace), handed over one at a time; one more
  // allocated at 2 and freed at 3.
  const std::vector<Lifetime> blocks = {{0, 0, 5, 10}, {1, 0, 4, 20}, {2, 2, 3, 7}};
  EXPECT_EQ(live_curve(blocks), (std::vector<uint64_t>{10, 30, 37, 30, 10, 0}));
}

}  // namespace
}  // namespace memreplay
