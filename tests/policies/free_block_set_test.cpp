// FreeBlockSet (policies/detail/free_block_set.h) against the ordered set it stands in for: random
// inserts and erases over several streams and sizes that crowd a few bins, checking after each
// step the full order (forwards and backwards), lower_bound for probes around every key, and size.
#include "policies/detail/free_block_set.h"

#include <gtest/gtest.h>

#include <deque>
#include <random>
#include <set>
#include <tuple>
#include <vector>

namespace memreplay::detail {
namespace {

struct TestBlock {
  StreamId stream = 0;
  uint64_t size = 0;
  uint64_t address = 0;
  TestBlock* free_prev = nullptr;
  TestBlock* free_next = nullptr;
};

using Key = std::tuple<StreamId, uint64_t, uint64_t>;
Key key_of(const TestBlock& b) { return {b.stream, b.size, b.address}; }

void expect_same_order(const FreeBlockSet<TestBlock>& set, const std::set<Key>& reference) {
  ASSERT_EQ(set.size(), reference.size());
  std::vector<Key> forwards;
  for (const TestBlock& b : set) forwards.push_back(key_of(b));
  ASSERT_EQ(forwards, std::vector<Key>(reference.begin(), reference.end()));
  std::vector<Key> backwards;
  for (auto it = set.end(); it != set.begin();) backwards.push_back(key_of(*--it));
  ASSERT_EQ(backwards, std::vector<Key>(reference.rbegin(), reference.rend()));
}

void expect_same_lower_bound(const FreeBlockSet<TestBlock>& set, const std::set<Key>& reference, StreamId stream,
                             uint64_t size) {
  const auto expected = reference.lower_bound(Key{stream, size, 0});
  const auto got = set.lower_bound(stream, size);
  if (expected == reference.end()) {
    EXPECT_TRUE(got == set.end()) << "stream " << stream << " size " << size;
  } else {
    ASSERT_FALSE(got == set.end()) << "stream " << stream << " size " << size;
    EXPECT_EQ(key_of(*got), *expected) << "stream " << stream << " size " << size;
  }
}

TEST(FreeBlockSet, MatchesAnOrderedSetUnderRandomChanges) {
  std::mt19937_64 rng(11);
  // Streams compared unsigned (a handle with the top bit set sorts last); sizes that share bins
  // (equal sizes at many addresses, neighbours within one eighth of a power of two) and sizes
  // far apart, down to the exact bins below 8.
  const std::vector<StreamId> streams = {0, 7, 0x8000000000000000ull};
  const std::vector<uint64_t> sizes = {
      1, 5, 512, 512, 1024, 1100, 1152, 2u << 20, (2u << 20) + 512, 20u << 20, ~uint64_t{0} >> 1, ~uint64_t{0}};
  std::deque<TestBlock> storage;
  std::vector<TestBlock*> in_set;
  std::set<Key> reference;
  FreeBlockSet<TestBlock> set;
  for (int step = 0; step < 4000; ++step) {
    const bool insert = in_set.empty() || (in_set.size() < 300 && rng() % 5 < 3);
    if (insert) {
      TestBlock& b = storage.emplace_back();
      b.stream = streams[rng() % streams.size()];
      b.size = sizes[rng() % sizes.size()];
      b.address = (rng() % 4096) * 512;
      if (!reference.insert(key_of(b)).second) continue;  // keys are unique in a pool
      set.insert(&b);
      in_set.push_back(&b);
    } else {
      const size_t i = rng() % in_set.size();
      reference.erase(key_of(*in_set[i]));
      set.erase(in_set[i]);
      in_set[i] = in_set.back();
      in_set.pop_back();
    }
    if (step % 50 == 0 || in_set.size() < 3) {
      expect_same_order(set, reference);
      for (StreamId stream : {StreamId{0}, StreamId{3}, StreamId{7}, StreamId{0x8000000000000000ull}})
        for (uint64_t size : {uint64_t{0}, uint64_t{1}, uint64_t{6}, uint64_t{513}, uint64_t{1100}, uint64_t{1153},
                              uint64_t{2u << 20}, uint64_t{21u << 20}, ~uint64_t{0}})
          expect_same_lower_bound(set, reference, stream, size);
    }
  }
  ASSERT_GT(reference.size(), 100u);  // the walk did reach a crowded set
  while (!in_set.empty()) {  // down to empty: streams leave the set and come back
    reference.erase(key_of(*in_set.back()));
    set.erase(in_set.back());
    in_set.pop_back();
  }
  expect_same_order(set, reference);
  EXPECT_TRUE(set.begin() == set.end());
  TestBlock& again = storage.emplace_back(TestBlock{.stream = 7, .size = 512, .address = 4096});
  set.insert(&again);
  reference.insert(key_of(again));
  expect_same_order(set, reference);
  expect_same_lower_bound(set, reference, 7, 1);
}

}  // namespace
}  // namespace memreplay::detail
