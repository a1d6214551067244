// AddressMap (policies/detail/address_map.h), the engine's and the pytorch policy's map of live
// blocks, against std::unordered_map: random inserts and removals through several growths, with
// keys a trace may hold (0, ~0 = the slots' "empty" marker, addresses that differ only in their
// low bits, 512-byte multiples).
#include "policies/detail/address_map.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <unordered_map>
#include <vector>

namespace memreplay::detail {
namespace {

std::map<uint64_t, uint64_t> contents(const AddressMap<uint64_t>& map) {
  std::map<uint64_t, uint64_t> all;
  map.for_each([&](uint64_t address, uint64_t value) { EXPECT_TRUE(all.emplace(address, value).second); });
  return all;
}

TEST(AddressMap, MatchesAHashMapUnderRandomChanges) {
  std::mt19937_64 rng(5);
  std::vector<uint64_t> keys = {0, ~uint64_t{0}, ~uint64_t{0} - 1, 1};
  for (uint64_t i = 0; i < 3000; ++i) keys.push_back(0x7f0000000000ull + i * 512);  // PyTorch's blocks
  for (uint64_t i = 0; i < 3000; ++i) keys.push_back(0x10000 + i);  // byte-apart addresses
  AddressMap<uint64_t> map;
  std::unordered_map<uint64_t, uint64_t> reference;
  for (int step = 0; step < 40000; ++step) {
    const uint64_t key = keys[rng() % keys.size()];
    if (rng() % 3 != 0) {
      const uint64_t value = rng();
      const auto [slot, made] = map.try_emplace(key);
      ASSERT_EQ(made, !reference.contains(key)) << key;
      if (made) ASSERT_EQ(*slot, 0u);  // value-initialised
      *slot = value;
      reference[key] = value;
    } else {
      const std::optional<uint64_t> taken = map.take(key);
      const auto it = reference.find(key);
      ASSERT_EQ(taken.has_value(), it != reference.end()) << key;
      if (taken) {
        ASSERT_EQ(*taken, it->second);
        reference.erase(it);
      }
    }
    ASSERT_EQ(map.size(), reference.size());
    if (step % 5000 == 0) {
      for (const uint64_t probe : {uint64_t{0}, ~uint64_t{0}, key, key + 1}) {
        const uint64_t* found = map.find(probe);
        ASSERT_EQ(found != nullptr, reference.contains(probe)) << probe;
        if (found) ASSERT_EQ(*found, reference.at(probe));
      }
    }
  }
  ASSERT_GT(reference.size(), 2000u);  // it grew several times
  const std::map<uint64_t, uint64_t> expected(reference.begin(), reference.end());
  EXPECT_EQ(contents(map), expected);
}

}  // namespace
}  // namespace memreplay::detail
