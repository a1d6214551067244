// NewestFitIndex against a plain list: random adds, updates and removes (through several
// compactions), and the newest id with at least a value after each.
#include "replayer/sim/newest_fit_index.h"

#include <gtest/gtest.h>

#include <random>
#include <utility>
#include <vector>

namespace memreplay {
namespace {

TEST(NewestFitIndex, NewestAtLeastMatchesAScanOfEveryEntry) {
  std::mt19937_64 random(7);
  NewestFitIndex index;
  std::vector<std::pair<uint32_t, uint64_t>> entries;  // oldest first
  std::vector<uint32_t> unused;
  uint32_t next_id = 0;
  for (int step = 0; step < 20000; ++step) {
    const uint64_t op = random() % 10;
    if (op < 4 || entries.empty()) {
      uint32_t id = next_id;
      if (!unused.empty() && random() % 2) {
        id = unused.back();
        unused.pop_back();
      } else {
        ++next_id;
      }
      const uint64_t value = random() % 40;
      index.add(id, value);
      entries.emplace_back(id, value);
    } else if (op < 7) {
      auto& entry = entries[random() % entries.size()];
      entry.second = random() % 40;
      index.set(entry.first, entry.second);
    } else {
      const size_t pick = random() % entries.size();
      index.remove(entries[pick].first);
      unused.push_back(entries[pick].first);
      entries.erase(entries.begin() + static_cast<std::ptrdiff_t>(pick));
    }
    const uint64_t wanted = 1 + random() % 40;
    std::optional<uint32_t> expected;
    for (auto entry = entries.rbegin(); entry != entries.rend(); ++entry)
      if (entry->second >= wanted) {
        expected = entry->first;
        break;
      }
    ASSERT_EQ(index.newest_at_least(wanted), expected) << "step " << step;
  }
}

// The newest entry answers at once when it has room; when it was removed or has too little, an
// older one answers, and a newer one with too little never does.
TEST(NewestFitIndex, TheNewestEntryAnswersOnlyWhenItHoldsTheValue) {
  NewestFitIndex index;
  index.add(0, 8);
  index.add(1, 3);
  index.add(2, 5);
  EXPECT_EQ(index.newest_at_least(5), 2u);
  EXPECT_EQ(index.newest_at_least(6), 0u) << "2 and 1 too small";
  index.remove(2);
  EXPECT_EQ(index.newest_at_least(1), 1u) << "the newest slot is dead";
  index.set(1, 0);
  EXPECT_EQ(index.newest_at_least(1), 0u);
  EXPECT_EQ(index.newest_at_least(9), std::nullopt);
}

}  // namespace
}  // namespace memreplay
