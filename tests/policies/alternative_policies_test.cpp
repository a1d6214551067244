// The models of other allocators (bfc, rmm_pool, rmm_binning, rmm_arena, buddy, gmlake): one rule
// of each, checked on a SimDevice, and their option errors. The contract suite runs them all too.
#include <gtest/gtest.h>

#include "base/units.h"
#include "policies/registry.h"
#include "replayer/sim/sim_device.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

struct OnSimDevice {
  explicit OnSimDevice(const std::string& spec, std::optional<uint64_t> capacity = std::nullopt)
      : device(SimDevice::Options{.capacity = capacity}), policy(PolicyRegistry::instance().create(spec, device)) {}
  SimDevice device;
  std::unique_ptr<Policy> policy;
};

TEST(BfcModel, AllowGrowthDoublesTheRegionSizeAndSplitsOnlyLargeRemainders) {
  OnSimDevice s("bfc:allow_growth:true");
  // The region size starts at 2 MiB; a 3 MiB request doubles it to 4 MiB for this region (no
  // further doubling after an increase); the next region is 4 MiB again, after which it doubles.
  const auto a = s.policy->allocate(3 * kMiB, 0);
  EXPECT_EQ(s.device.counters().reserved_bytes, 4 * kMiB);
  EXPECT_EQ(a->size, 4 * kMiB) << "a 4 MiB chunk is less than twice 3 MiB: not split";
  s.policy->allocate(1 * kMiB, 0);
  EXPECT_EQ(s.device.counters().reserved_bytes, 8 * kMiB);
  EXPECT_EQ(s.policy->allocate(100, 0)->size, 256u) << "256-byte rounding, split from the 3 MiB rest";
  s.policy->allocate(4 * kMiB, 0);
  EXPECT_EQ(s.device.counters().reserved_bytes, 16 * kMiB) << "the third region: 8 MiB";
}

TEST(BfcModel, WithoutAllowGrowthTheWholeLimitIsTakenAtOnce) {
  OnSimDevice s("bfc", 512 * kMiB);
  s.policy->allocate(1, 0);
  EXPECT_EQ(s.device.counters().reserved_bytes, 512 * kMiB);
  EXPECT_EQ(s.device.counters().malloc_calls, 1u);
  EXPECT_FALSE(s.policy->allocate(600 * kMiB, 0));
}

TEST(RmmPoolModel, ThePoolDoublesAndStreamsLendFreeBlocks) {
  OnSimDevice s("rmm_pool");
  const auto a = s.policy->allocate(10 * kMiB, 1);
  s.policy->allocate(1 * kMiB, 1);  // the pool (10 MiB) is full: grows by max(1 MiB, 10 MiB)
  EXPECT_EQ(s.device.counters().reserved_bytes, 20 * kMiB);
  s.policy->free(a->address, 1);
  EXPECT_EQ(s.policy->allocate(10 * kMiB, 2)->address, a->address) << "stream 2 takes stream 1's free block";
  EXPECT_EQ(s.device.counters().malloc_calls, 2u);
}

TEST(RmmBinningModel, SmallRequestsTakeAWholeBinBlock) {
  OnSimDevice s("rmm_binning");
  EXPECT_EQ(s.policy->allocate(512, 0)->size, 256u << 10);
  EXPECT_EQ(s.policy->allocate(300 << 10, 0)->size, 512u << 10);
  EXPECT_EQ(s.policy->allocate(5 * kMiB, 0)->size, 5 * kMiB) << "above the largest bin: the pool";
  // 128 blocks of 256 KiB and 128 of 512 KiB were taken from the pool at once.
  EXPECT_GE(s.device.counters().reserved_bytes, 128 * (256u << 10) + 128 * (512u << 10));
}

TEST(RmmArenaModel, OneUpstreamAllocationAndSuperblocksPerStream) {
  OnSimDevice s("rmm_arena:arena_size:256MiB");
  const auto a = s.policy->allocate(1000, 1);
  const auto b = s.policy->allocate(1000, 2);
  EXPECT_EQ(s.device.counters().malloc_calls, 1u);
  EXPECT_EQ(s.device.counters().reserved_bytes, 256 * kMiB);
  EXPECT_GE(b->address - a->address, kMiB) << "each stream carves its own superblock";
  EXPECT_FALSE(s.policy->allocate(300 * kMiB, 1));
}

TEST(BuddyModel, BlocksArePowersOfTwoAndBuddiesMerge) {
  OnSimDevice s("buddy:region_size:64MiB");
  const auto a = s.policy->allocate(3 * kMiB, 0);
  const auto b = s.policy->allocate(3 * kMiB, 0);
  EXPECT_EQ(a->size, 4 * kMiB);
  EXPECT_EQ(b->address, a->address + 4 * kMiB) << "the buddy of the first block";
  s.policy->free(a->address, 0);
  s.policy->free(b->address, 0);
  EXPECT_EQ(s.policy->allocate(64 * kMiB, 0)->address, a->address) << "merged back into the whole region";
  EXPECT_EQ(s.device.counters().malloc_calls, 1u);
}

TEST(GmlakeModel, StitchingReusesFreeChunksWithoutNewMemory) {
  OnSimDevice s("gmlake");
  const auto a = s.policy->allocate(6 * kMiB, 0);
  const auto b = s.policy->allocate(4 * kMiB, 0);
  s.policy->free(a->address, 0);
  s.policy->free(b->address, 0);
  const uint64_t reserved = s.device.counters().reserved_bytes;
  // 10 MiB: no single free block holds it, both together do.
  s.policy->allocate(10 * kMiB, 0);
  EXPECT_EQ(s.device.counters().reserved_bytes, reserved);
  EXPECT_EQ(s.device.counters().reserved_peak, reserved);
  EXPECT_EQ(s.device.counters().unmap_calls, 2u);
}

TEST(AlternativePolicies, BadOptionsNameThePolicyAndTheOption) {
  SimDevice device(SimDevice::Options{});
  const auto error = [&](const std::string& spec) {
    return testing::error_of<PolicySpecError>([&] { PolicyRegistry::instance().create(spec, device); });
  };
  EXPECT_NE(error("bfc:allow_growth:yes").find("bfc option 'allow_growth'"), std::string::npos);
  EXPECT_NE(error("buddy:region_size:3MiB").find("buddy option 'region_size': must be a power of two"),
            std::string::npos);
  EXPECT_NE(error("rmm_pool:maximum_pool_size:0").find("rmm_pool option 'maximum_pool_size'"), std::string::npos);
  // The pool under the bins reads its options from rmm_binning's spec, and says so.
  EXPECT_NE(error("rmm_binning:maximum_pool_size:0").find("rmm_binning option 'maximum_pool_size'"), std::string::npos);
  EXPECT_EQ(error("rmm_binning:initial_pool_size:1GiB,maximum_pool_size:512MiB"),
            "rmm_binning option 'initial_pool_size': larger than maximum_pool_size");
  EXPECT_NE(error("rmm_binning:blocks_to_preallocate:0").find("must be 1..65536"), std::string::npos);
  // Found by policy_options_fuzz (an out-of-memory: the bin loop wrapped past 2^63).
  EXPECT_NE(error("rmm_binning:max_bin:9223372036854775808")
                .find("rmm_binning option 'max_bin': must be a power of two from 256 bytes to 1 TiB"),
            std::string::npos);
  EXPECT_NE(error("rmm_binning:max_bin:99999999999999m").find("rmm_binning option 'max_bin'"), std::string::npos);
  EXPECT_NE(error("rmm_arena:arena_size:1KiB").find("must be at least 1MiB"), std::string::npos);
  EXPECT_NE(error("gmlake:stitch:True").find("gmlake"), std::string::npos);
  EXPECT_NE(error("memreplay:knob:1").find("memreplay"), std::string::npos);
}

}  // namespace
}  // namespace memreplay
