// Unit tests of the pytorch policy's rules (policies/pytorch/), each on a small hand-made sequence
// against a SimDevice. The rules and their examples come from docs/policies.md (PyTorch's allocator, rule by rule) and
// PyTorch 2.11's CUDACachingAllocator.cpp / AllocatorConfig.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "policies/pytorch/alloc_config.h"
#include "policies/pytorch/caching_allocator_policy.h"
#include "policies/pytorch/size_rounding.h"
#include "policies/registry.h"
#include "replayer/sim/sim_device.h"

namespace memreplay::pytorch {
namespace {

constexpr uint64_t MiB = 1ull << 20;

SimDevice make_device(std::optional<uint64_t> capacity = std::nullopt) {
  SimDevice::Options options;
  options.capacity = capacity;
  return SimDevice(options);
}

struct Fixture {
  explicit Fixture(const std::string& conf, std::optional<uint64_t> capacity = std::nullopt)
      : device(make_device(capacity)), policy(parse_alloc_config(conf), device) {}

  Block alloc(uint64_t bytes, StreamId stream = 0) {
    const auto block = policy.allocate(bytes, stream);
    EXPECT_TRUE(block.has_value()) << "allocate(" << bytes << ") failed";
    return block.value_or(Block{});
  }
  const DeviceCounters& counters() const { return device.counters(); }
  const CachingAllocatorStats& stats() const { return policy.allocator_stats(); }
  uint64_t device_allocs() const { return counters().malloc_calls + counters().map_calls; }
  uint64_t device_frees() const { return counters().free_calls + counters().unmap_calls; }

  SimDevice device;
  CachingAllocatorPolicy policy;
};

// Allocates and frees a block of `cached` bytes, then allocates `request`: {the freed block, the new one}.
std::pair<Block, Block> free_then_alloc(Fixture& f, uint64_t cached, uint64_t request) {
  const Block freed = f.alloc(cached);
  f.policy.free(freed.address, 0);
  return {freed, f.alloc(request)};
}

// The one-line error parse_alloc_config gives for `conf`, "" when it parses.
std::string spec_error(const std::string& conf) {
  try {
    parse_alloc_config(conf);
    return "";
  } catch (const PolicySpecError& e) {
    return e.what();
  }
}

// ---- options --------------------------------------------------------------------------------------

TEST(PytorchPolicyConfig, EmptyStringGivesPyTorchDefaults) {
  const AllocConfig c = parse_alloc_config("");
  EXPECT_EQ(c.max_split_size, UINT64_MAX);
  EXPECT_EQ(c.max_non_split_rounding_size, 20 * MiB);
  EXPECT_EQ(c.large_segment_size, 20 * MiB);
  EXPECT_EQ(c.garbage_collection_threshold, 0.0);
  EXPECT_FALSE(c.expandable_segments);
  for (const uint64_t d : c.roundup_power2_divisions) EXPECT_EQ(d, 0u);
}

TEST(PytorchPolicyConfig, ParsesEveryDecisionOption) {
  const AllocConfig c = parse_alloc_config(
      "max_split_size_mb:64, max_non_split_rounding_mb:30,garbage_collection_threshold:0.7,"
      "expandable_segments:True,roundup_power2_divisions:4,per_process_memory_fraction:0.5");
  EXPECT_EQ(c.max_split_size, 64 * MiB);
  EXPECT_EQ(c.max_non_split_rounding_size, 30 * MiB);
  EXPECT_DOUBLE_EQ(c.garbage_collection_threshold, 0.7);
  EXPECT_TRUE(c.expandable_segments);
  EXPECT_DOUBLE_EQ(c.per_process_memory_fraction, 0.5);
  for (const uint64_t d : c.roundup_power2_divisions) EXPECT_EQ(d, 4u);
  EXPECT_FALSE(parse_alloc_config("expandable_segments:False").expandable_segments);
}

TEST(PytorchPolicyConfig, RoundupListUsesTheNewParserSemantics) {
  // [256:1,512:2,1024:4,>:8]: the first entry fills every interval below 256 MiB; '>' starts
  // after the last listed interval (1024 MiB keeps 4).
  const AllocConfig c = parse_alloc_config("roundup_power2_divisions:[256:1,512:2,1024:4,>:8]");
  const std::vector<uint64_t> expected{1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 4, 8, 8, 8, 8, 8};
  EXPECT_EQ(std::vector<uint64_t>(c.roundup_power2_divisions.begin(), c.roundup_power2_divisions.end()), expected);

  // The spec's example: unlisted gaps stay 0, so 1024 MiB gets no rounding.
  const AllocConfig g = parse_alloc_config("roundup_power2_divisions:[128:8,256:16,512:1,2048:8,>:2]");
  EXPECT_EQ(g.divisions_for(1024 * MiB), 0u);
  EXPECT_EQ(g.divisions_for(100 * MiB), 8u);  // filled below the first entry
  EXPECT_EQ(g.divisions_for(300 * MiB), 16u);
  EXPECT_EQ(g.divisions_for(600 * MiB), 1u);
  EXPECT_EQ(g.divisions_for(3000 * MiB), 8u);  // 2048 MiB interval itself: not overwritten by '>'
  EXPECT_EQ(g.divisions_for(5000 * MiB), 2u);
  EXPECT_EQ(g.divisions_for(100ull << 30), 2u);  // beyond 32 GiB: the last interval
}

TEST(PytorchPolicyConfig, LargeSegmentSizeIsReadFirstAndSetsTheMinimums) {
  const AllocConfig c = parse_alloc_config("max_split_size_mb:40,large_segment_size_mb:40");
  EXPECT_EQ(c.large_segment_size, 40 * MiB);
  EXPECT_EQ(c.max_non_split_rounding_size, 40 * MiB);  // defaults to the large segment size
  EXPECT_EQ(segment_size(2 * MiB, c), 40 * MiB);
  EXPECT_NE(spec_error("large_segment_size_mb:40,max_split_size_mb:30"), "");
  EXPECT_NE(spec_error("large_segment_size_mb:10"), "");  // must be > 10
}

TEST(PytorchPolicyConfig, IgnoredOptionsAreAcceptedButValidated) {
  EXPECT_NO_THROW(
      parse_alloc_config("backend:native,release_lock_on_cudamalloc:True,pinned_use_cuda_host_register:False,"
                         "pinned_num_register_threads:8,pinned_use_background_threads:True,"
                         "graph_capture_record_stream_reuse:False,pinned_reserve_segment_size_mb:16"));
  EXPECT_NE(spec_error("pinned_num_register_threads:3"), "");
  EXPECT_NE(spec_error("release_lock_on_cudamalloc:yes"), "");
}

TEST(PytorchPolicyConfig, BadOptionsAreOneLineErrorsNamingTheOption) {
  struct Case {
    std::string conf;
    std::string names;
  };
  const std::vector<Case> cases{
      {"max_split_size:64", "max_split_size"},  // unknown key
      {"max_split_size_mb:19", "max_split_size_mb"},  // below 20 MiB
      {"max_split_size_mb:abc", "max_split_size_mb"},
      {"max_split_size_mb:-1", "max_split_size_mb"},
      {"max_split_size_mb", "max_split_size_mb"},  // no value
      {"max_non_split_rounding_mb:10", "max_non_split_rounding_mb"},
      {"roundup_power2_divisions:3", "roundup_power2_divisions"},
      {"roundup_power2_divisions:[256:3]", "roundup_power2_divisions"},
      {"roundup_power2_divisions:[300:4]", "roundup_power2_divisions"},
      {"roundup_power2_divisions:[256:4", "roundup_power2_divisions"},
      {"garbage_collection_threshold:0", "garbage_collection_threshold"},
      {"garbage_collection_threshold:1.0", "garbage_collection_threshold"},
      {"garbage_collection_threshold:1.5", "garbage_collection_threshold"},
      {"expandable_segments:true", "expandable_segments"},  // PyTorch accepts True/False only
      {"backend:cudaMallocAsync", "cuda_async"},
      {"backend:magic", "backend"},
      {"per_process_memory_fraction:1.5", "per_process_memory_fraction"},
  };
  for (const Case& c : cases) {
    const std::string message = spec_error(c.conf);
    EXPECT_NE(message.find(c.names), std::string::npos) << c.conf << " -> '" << message << "'";
    EXPECT_EQ(message.find('\n'), std::string::npos) << c.conf;
  }
  EXPECT_EQ(spec_error("max_split_size_mb:20"), "");  // 2.11: >= 20 is allowed
}

TEST(PytorchPolicyConfig, RegistryBuildsThePolicyFromGroundTruthConfStrings) {
  SimDevice device = make_device();
  for (const std::string conf :
       {"", "expandable_segments:True", "max_split_size_mb:64", "roundup_power2_divisions:4",
        "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]", "garbage_collection_threshold:0.7"}) {
    auto policy = PolicyRegistry::instance().create("pytorch:" + conf, device);
    ASSERT_NE(policy, nullptr) << conf;
    EXPECT_NE(dynamic_cast<CachingAllocatorPolicy*>(policy.get()), nullptr);
  }
  EXPECT_NE(PolicyRegistry::instance().create("pytorch", device), nullptr);
  EXPECT_THROW(PolicyRegistry::instance().create("pytorch:expandable_segments:maybe", device), PolicySpecError);
}

// ---- rounding and segment sizes -------------------------------------------------------------------

TEST(PytorchPolicyRounding, DefaultRoundsTo512) {
  const AllocConfig c;
  EXPECT_EQ(round_size(1, c), 512u);
  EXPECT_EQ(round_size(512, c), 512u);
  EXPECT_EQ(round_size(513, c), 1024u);
  EXPECT_EQ(round_size(1200, c), 1536u);
  EXPECT_EQ(round_size(5'000'000, c), 5'000'192u);
}

TEST(PytorchPolicyRounding, PowerOfTwoDivisions) {
  EXPECT_EQ(roundup_power2_next_division(1200, 4), 1280u);  // the docstring example
  EXPECT_EQ(roundup_power2_next_division(4 * MiB, 4), 4 * MiB);  // a power of two stays
  const AllocConfig four = parse_alloc_config("roundup_power2_divisions:4");
  EXPECT_EQ(round_size(1200, four), 1536u);  // 1200 <= 512 * 4: plain 512 rounding
  EXPECT_EQ(round_size(5'000'000, four), 5'242'880u);  // 4 MiB + k * 1 MiB
  EXPECT_EQ(round_size(3000, four), 3072u);

  const AllocConfig list = parse_alloc_config("roundup_power2_divisions:[256:1,512:2,1024:4,>:8]");
  EXPECT_EQ(round_size(300 * MiB + 1, list), 300 * MiB + 512);  // 1 division: no rounding
  EXPECT_EQ(round_size(600 * MiB + 1, list), 768 * MiB);  // 2 divisions of 512 MiB
  EXPECT_EQ(round_size(1100 * MiB, list), 1280 * MiB);  // 4 divisions of 1 GiB
  EXPECT_EQ(round_size(3000 * MiB, list), 3072 * MiB);  // 8 divisions of 2 GiB
}

TEST(PytorchPolicyRounding, SegmentSizes) {
  const AllocConfig c;
  EXPECT_EQ(segment_size(512, c), 2 * MiB);
  EXPECT_EQ(segment_size(1 * MiB, c), 2 * MiB);
  EXPECT_EQ(segment_size(1 * MiB + 512, c), 20 * MiB);
  EXPECT_EQ(segment_size(10 * MiB - 512, c), 20 * MiB);
  EXPECT_EQ(segment_size(10 * MiB, c), 10 * MiB);
  EXPECT_EQ(segment_size(11 * MiB + 512, c), 12 * MiB);
  EXPECT_TRUE(is_small_request(1 * MiB));
  EXPECT_FALSE(is_small_request(1 * MiB + 512));
}

// ---- pools, best fit, splitting ---------------------------------------------------------------------

TEST(PytorchPolicyAlloc, SmallRequestsShareATwoMiBSegmentFromItsFront) {
  Fixture f("");
  const Block a = f.alloc(1000);
  const Block b = f.alloc(1000);
  EXPECT_EQ(a.size, 1024u);
  EXPECT_EQ(b.address, a.address + 1024);  // carved from the front of the remainder
  EXPECT_EQ(f.counters().malloc_calls, 1u);
  EXPECT_EQ(f.counters().reserved_bytes, 2 * MiB);
}

TEST(PytorchPolicyAlloc, SmallRemainderSplitsDownTo512Bytes) {
  Fixture f("");
  const Block a = f.alloc(1 * MiB);
  const Block b = f.alloc(1 * MiB - 512);
  const Block c = f.alloc(100);  // the last 512 bytes of the segment
  EXPECT_EQ(b.address, a.address + 1 * MiB);
  EXPECT_EQ(c.address, b.address + 1 * MiB - 512);
  EXPECT_EQ(c.size, 512u);
  EXPECT_EQ(f.counters().malloc_calls, 1u);
  f.alloc(100);
  EXPECT_EQ(f.counters().malloc_calls, 2u);
}

TEST(PytorchPolicyAlloc, MidSizeRequestsSplitATwentyMiBSegment) {
  Fixture f("");
  const Block a = f.alloc(2 * MiB);
  const Block b = f.alloc(3 * MiB);
  EXPECT_EQ(f.counters().malloc_calls, 1u);
  EXPECT_EQ(f.counters().reserved_bytes, 20 * MiB);
  EXPECT_EQ(a.size, 2 * MiB);
  EXPECT_EQ(b.address, a.address + 2 * MiB);
  EXPECT_EQ(f.stats().inactive_split_bytes.current, static_cast<int64_t>(15 * MiB));
}

TEST(PytorchPolicyAlloc, LargeRemainderOfAtMostOneMiBIsNotSplit) {
  Fixture f("");
  const Block a = f.alloc(11 * MiB + 1);  // rounds to 11 MiB + 512, segment 12 MiB
  EXPECT_EQ(a.size, 12 * MiB);  // remainder 1 MiB - 512 stays in the block
  EXPECT_EQ(f.stats().allocated_bytes.current, static_cast<int64_t>(12 * MiB));
  const Block b = f.alloc(10 * MiB + 1);  // segment 12 MiB, remainder 2 MiB - 512 > 1 MiB: split
  EXPECT_EQ(b.size, 10 * MiB + 512);
  EXPECT_EQ(f.counters().malloc_calls, 2u);
  EXPECT_EQ(f.alloc(11 * MiB).size, 12 * MiB);  // remainder exactly 1 MiB: not split (strictly >)
}

TEST(PytorchPolicyAlloc, BestFitPrefersTheSmallestBlockThenTheLowestAddress) {
  Fixture f("");
  const Block twelve = f.alloc(12 * MiB);
  const Block fourteen = f.alloc(14 * MiB);
  ASSERT_LT(fourteen.address, twelve.address);  // SimDevice hands out addresses top-down
  f.policy.free(twelve.address, 0);
  f.policy.free(fourteen.address, 0);
  // 11.5 MiB fits both: the smaller block wins although its address is higher.
  EXPECT_EQ(f.alloc(11 * MiB + 512 * 1024).address, twelve.address);

  Fixture g("");
  const Block first = g.alloc(12 * MiB);
  const Block second = g.alloc(12 * MiB);
  g.policy.free(first.address, 0);
  g.policy.free(second.address, 0);
  EXPECT_EQ(g.alloc(12 * MiB).address, std::min(first.address, second.address));
  EXPECT_EQ(g.alloc(12 * MiB).address, std::max(first.address, second.address));
  EXPECT_EQ(g.counters().malloc_calls, 2u);
}

TEST(PytorchPolicyAlloc, FreeBlocksAreReusedOnTheirOwnStreamOnly) {
  Fixture f("");
  const Block a = f.alloc(12 * MiB, /*stream=*/7);
  f.policy.free(a.address, 0);
  const Block b = f.alloc(12 * MiB, /*stream=*/9);
  EXPECT_NE(b.address, a.address);
  EXPECT_EQ(f.counters().malloc_calls, 2u);
  EXPECT_EQ(f.alloc(12 * MiB, 7).address, a.address);
}

TEST(PytorchPolicyAlloc, FreeMergesNeighboursBackIntoTheWholeSegment) {
  Fixture f("");
  const Block a = f.alloc(4 * MiB);
  const Block b = f.alloc(4 * MiB);
  const Block c = f.alloc(4 * MiB);
  f.policy.free(b.address, 0);
  EXPECT_EQ(f.stats().inactive_split.current, 2);  // b's hole and the tail
  f.policy.free(a.address, 0);
  f.policy.free(c.address, 0);
  EXPECT_EQ(f.stats().inactive_split.current, 0);
  EXPECT_EQ(f.stats().inactive_split_bytes.current, 0);
  // One whole free segment: a 20 MiB request reuses it, and empty_cache releases it in one call.
  const Block whole = f.alloc(20 * MiB);
  EXPECT_EQ(whole.address, a.address);
  EXPECT_EQ(f.counters().malloc_calls, 1u);
  f.policy.free(whole.address, 0);
  f.policy.empty_cache();
  EXPECT_EQ(f.counters().free_calls, 1u);
  EXPECT_EQ(f.counters().reserved_bytes, 0u);
}

TEST(PytorchPolicyAlloc, OversizeBlocksServeOnlyRequestsWithinTheRoundingLimit) {
  Fixture f("max_split_size_mb:64");
  const Block big = f.alloc(100 * MiB);
  f.policy.free(big.address, 0);
  f.alloc(50 * MiB);  // below max_split_size: never gets an oversize block
  EXPECT_EQ(f.counters().malloc_calls, 2u);
  f.alloc(70 * MiB);  // 100 MiB >= 70 + 20 MiB: too much slack
  EXPECT_EQ(f.counters().malloc_calls, 3u);
  EXPECT_EQ(f.stats().oversize_segments.current, 2);  // 100 and 70 MiB

  Fixture g("max_split_size_mb:64");
  const auto [big2, reused] = free_then_alloc(g, 100 * MiB, 90 * MiB);  // 100 < 90 + 20: taken whole, not split
  EXPECT_EQ(reused.address, big2.address);
  EXPECT_EQ(reused.size, 100 * MiB);
  EXPECT_EQ(g.counters().malloc_calls, 1u);
}

TEST(PytorchPolicyAlloc, MaxNonSplitRoundingWidensTheOversizeSlack) {
  Fixture f("max_split_size_mb:64,max_non_split_rounding_mb:40");
  const auto [big, reused] = free_then_alloc(f, 100 * MiB, 70 * MiB);  // 100 < 70 + 40
  EXPECT_EQ(reused.address, big.address);
  EXPECT_EQ(reused.size, 100 * MiB);
  EXPECT_EQ(f.counters().malloc_calls, 1u);
}

TEST(PytorchPolicyAlloc, RequestsAboveMaxSplitSizeAreNeverSplit) {
  Fixture f("max_split_size_mb:20");
  const Block b = free_then_alloc(f, 30 * MiB, 21 * MiB).second;  // 30 < 21 + 20: whole, 9 MiB not split off
  EXPECT_EQ(b.size, 30 * MiB);
  EXPECT_EQ(f.stats().inactive_split.current, 0);
}

// ---- expandable segments --------------------------------------------------------------------------

TEST(PytorchPolicyExpandable, GrowsOneSegmentPageByPage) {
  Fixture f("expandable_segments:True");
  const Block a = f.alloc(100 * MiB);  // 5 pages of 20 MiB, one map call
  EXPECT_EQ(f.counters().map_calls, 1u);
  EXPECT_EQ(f.counters().reserved_bytes, 100 * MiB);
  EXPECT_EQ(f.counters().malloc_calls, 0u);
  EXPECT_EQ(f.counters().reserve_calls, 1u);
  const Block b = f.alloc(30 * MiB);  // no free remainder: 2 more pages at the tail
  EXPECT_EQ(b.address, a.address + 100 * MiB);
  EXPECT_EQ(b.size, 30 * MiB);
  EXPECT_EQ(f.counters().map_calls, 2u);
  EXPECT_EQ(f.counters().reserved_bytes, 140 * MiB);
  const Block c = f.alloc(10 * MiB);  // the 10 MiB left on the last page
  EXPECT_EQ(c.address, b.address + 30 * MiB);
  EXPECT_EQ(f.counters().map_calls, 2u);
  EXPECT_EQ(f.device_allocs(), 2u);  // PyTorch's num_device_alloc

  f.alloc(1000);  // the small pool has its own segment with 2 MiB pages
  EXPECT_EQ(f.counters().reserve_calls, 2u);
  EXPECT_EQ(f.counters().reserved_bytes, 142 * MiB);
}

TEST(PytorchPolicyExpandable, EmptyCacheUnmapsOnlyWholeFreePages) {
  Fixture f("expandable_segments:True");
  const Block a = f.alloc(10 * MiB);  // page 0; [10, 20) MiB stays free
  const Block b = f.alloc(25 * MiB);  // [10, 35) MiB: maps page 1, [35, 40) free
  EXPECT_EQ(b.address, a.address + 10 * MiB);
  EXPECT_EQ(f.counters().map_calls, 2u);
  f.policy.free(a.address, 0);  // free [0, 10) and [35, 40): no whole page
  f.policy.empty_cache();
  EXPECT_EQ(f.counters().unmap_calls, 0u);
  EXPECT_EQ(f.counters().reserved_bytes, 40 * MiB);
  f.policy.free(b.address, 0);  // [0, 40) free: two pages, one unmap call
  f.policy.empty_cache();
  EXPECT_EQ(f.counters().unmap_calls, 1u);
  EXPECT_EQ(f.counters().reserved_bytes, 0u);
  EXPECT_EQ(f.counters().release_calls, 1u);  // the emptied VA is released
  EXPECT_EQ(f.device_frees(), 1u);  // num_device_free
  EXPECT_EQ(f.stats().num_sync_all_streams, 2u);
}

TEST(PytorchPolicyExpandable, ReusesFreedPagesBeforeMappingNewOnes) {
  Fixture f("expandable_segments:True");
  const Block a = f.alloc(40 * MiB);
  const Block b = f.alloc(20 * MiB);
  f.policy.free(a.address, 0);
  const Block c = f.alloc(30 * MiB);  // best fit in [0, 40): no new page
  EXPECT_EQ(c.address, a.address);
  EXPECT_EQ(f.counters().map_calls, 2u);
  f.policy.free(b.address, 0);
  f.policy.free(c.address, 0);
  f.policy.empty_cache();
  EXPECT_EQ(f.counters().reserved_bytes, 0u);
}

// ---- empty_cache, retries, OOM, GC ----------------------------------------------------------------

TEST(PytorchPolicyRelease, EmptyCacheReleasesWholeFreeSegmentsOnly) {
  Fixture f("");
  const Block kept = f.alloc(1000);  // segment 1: partly used
  f.alloc(1000);
  const Block other = f.alloc(12 * MiB);  // segment 2: will be entirely free
  f.policy.free(kept.address, 0);
  f.policy.free(other.address, 0);
  f.policy.empty_cache();
  EXPECT_EQ(f.counters().free_calls, 1u);
  EXPECT_EQ(f.counters().reserved_bytes, 2 * MiB);
  EXPECT_EQ(f.stats().segment.current, 1);
}

TEST(PytorchPolicyRelease, RetryReleasesTheCacheUnderTheLimit) {
  Fixture f("", /*capacity=*/40 * MiB);
  const Block a = f.alloc(12 * MiB);
  f.policy.free(a.address, 0);
  const Block b = f.alloc(30 * MiB);  // 12 + 30 > 40: free the cache, then retry
  EXPECT_EQ(b.size, 30 * MiB);
  EXPECT_EQ(f.policy.stats().alloc_retries, 1u);
  EXPECT_EQ(f.stats().num_sync_all_streams, 1u);
  EXPECT_EQ(f.counters().free_calls, 1u);
  EXPECT_EQ(f.counters().failed_calls, 0u);  // the limit is checked before any device call
  EXPECT_EQ(stats_by_name(f.policy.stats(), f.counters()).at("num_alloc_retries"), 1u);
}

// fits_without_release answers what allocate() would do before its release ladder, and changes
// nothing: where it says no, the allocation that follows releases the cache and retries.
TEST(PytorchPolicyRelease, FitsWithoutReleaseIsTheRetrysQuestionAskedAhead) {
  Fixture f("", /*capacity=*/40 * MiB);
  const Block a = f.alloc(12 * MiB);  // a 12 MiB segment, cached once freed
  f.policy.free(a.address, 0);
  EXPECT_TRUE(f.policy.fits_without_release(12 * MiB, 0));  // the cached block serves it
  EXPECT_TRUE(f.policy.fits_without_release(6 * MiB, 0));  // a part of it
  EXPECT_TRUE(f.policy.fits_without_release(28 * MiB, 1));  // another stream: a new segment, 12 + 28 <= 40
  EXPECT_FALSE(f.policy.fits_without_release(28 * MiB + 1, 1));  // ... of 30 MiB: past the cap
  EXPECT_FALSE(f.policy.fits_without_release(30 * MiB, 0));  // 12 cached + 30 > 40
  EXPECT_EQ(f.counters().reserved_bytes, 12 * MiB);  // asking changed nothing
  f.alloc(30 * MiB);  // where it said no, the allocation releases the cache and retries
  EXPECT_EQ(f.policy.stats().alloc_retries, 1u);
  EXPECT_TRUE(f.policy.fits_without_release(512 * 1024, 0));  // a small segment: 30 + 2 <= 40
  EXPECT_FALSE(f.policy.fits_without_release(2 * MiB, 0));  // a 20 MiB one: 30 + 20 > 40
  Fixture uncapped("");
  uncapped.policy.free(uncapped.alloc(12 * MiB).address, 0);
  EXPECT_TRUE(uncapped.policy.fits_without_release(30 * MiB, 0));  // the device's whole memory is the limit
}

TEST(PytorchPolicyRelease, OutOfMemoryIsAResult) {
  Fixture f("", /*capacity=*/40 * MiB);
  f.alloc(30 * MiB);
  EXPECT_FALSE(f.policy.allocate(20 * MiB, 0).has_value());
  EXPECT_EQ(f.policy.stats().ooms, 1u);
  EXPECT_EQ(f.policy.stats().alloc_retries, 1u);
  EXPECT_EQ(stats_by_name(f.policy.stats(), f.counters()).at("num_ooms"), 1u);
  EXPECT_EQ(f.counters().malloc_calls, 1u);
  EXPECT_TRUE(f.policy.allocate(10 * MiB, 0).has_value());  // still usable afterwards
}

// Leaves a free oversize 100 MiB segment and a free 12 MiB one in the cache; returns the latter.
Block cache_oversize_and_small(Fixture& f) {
  const Block big = f.alloc(100 * MiB);
  const Block small = f.alloc(12 * MiB);
  f.policy.free(big.address, 0);
  f.policy.free(small.address, 0);
  return small;
}

TEST(PytorchPolicyRelease, MaxSplitSizeReleasesOversizeSegmentsBeforeEverything) {
  Fixture f("max_split_size_mb:64", /*capacity=*/130 * MiB);
  const Block small = cache_oversize_and_small(f);
  // 30 MiB may not take the oversize block, and 112 + 30 > 130: release_available_cached_blocks
  // frees that one oversize segment, keeps the 12 MiB one, and no last-resort retry is needed.
  f.alloc(30 * MiB);
  EXPECT_EQ(f.counters().free_calls, 1u);
  EXPECT_EQ(f.policy.stats().alloc_retries, 0u);
  EXPECT_EQ(f.alloc(12 * MiB).address, small.address);

  // Oversize segments that together fall short of the request stay released, and the
  // last-resort path then frees everything else.
  Fixture g("max_split_size_mb:64", /*capacity=*/230 * MiB);
  cache_oversize_and_small(g);
  g.alloc(120 * MiB);
  EXPECT_EQ(g.counters().free_calls, 2u);
  EXPECT_EQ(g.policy.stats().alloc_retries, 1u);
}

TEST(PytorchPolicyRelease, GarbageCollectionFreesOldWholeSegmentsUnderALimit) {
  // Limit 100 MiB, threshold 0.5: collection starts above 50 MiB reserved.
  Fixture f("garbage_collection_threshold:0.5", /*capacity=*/100 * MiB);
  std::vector<Block> blocks;
  for (const uint64_t mib : {12u, 14u, 16u, 18u}) blocks.push_back(f.alloc(mib * MiB));
  for (const Block& b : blocks) f.policy.free(b.address, 0);  // 60 MiB cached, all the same age
  f.policy.free(f.alloc(12 * MiB).address, 0);  // the 12 MiB block gets younger
  f.alloc(30 * MiB);  // no fit: GC frees the blocks at least as old as the mean (14, 16, 18)
  EXPECT_EQ(f.counters().free_calls, 3u);
  EXPECT_EQ(f.policy.stats().alloc_retries, 0u);
  EXPECT_EQ(f.alloc(12 * MiB).address, blocks[0].address);  // the young one survived

  Fixture unlimited("garbage_collection_threshold:0.5");  // no limit: no GC (2.11)
  for (const uint64_t mib : {12u, 14u, 16u, 18u}) unlimited.policy.free(unlimited.alloc(mib * MiB).address, 0);
  unlimited.alloc(30 * MiB);
  EXPECT_EQ(unlimited.counters().free_calls, 0u);
}

TEST(PytorchPolicyRelease, PerProcessMemoryFractionOptionSetsTheLimit) {
  SimDevice::Options options;
  options.total_memory = 1000 * MiB;
  SimDevice device(options);
  CachingAllocatorPolicy policy(parse_alloc_config("per_process_memory_fraction:0.1"), device);
  EXPECT_EQ(policy.allowed_memory_maximum(), 100 * MiB);
  EXPECT_TRUE(policy.allocate(90 * MiB, 0).has_value());
  EXPECT_FALSE(policy.allocate(20 * MiB, 0).has_value());
}

// ---- adoption of a running allocator --------------------------------------------------------------

TEST(PytorchPolicyAdopt, SeedsSegmentsAndLiveBlocksAtExactOffsets) {
  Fixture f("");
  const auto segment = f.policy.adopt_segment(20 * MiB, 0);
  ASSERT_TRUE(segment.has_value());
  const auto live = f.policy.adopt_block(*segment + 2 * MiB, 4 * MiB, 4'000'000, 0);
  ASSERT_TRUE(live.has_value());
  EXPECT_EQ(live->address, *segment + 2 * MiB);
  EXPECT_EQ(f.stats().allocated_bytes.current, static_cast<int64_t>(4 * MiB));
  EXPECT_EQ(f.stats().inactive_split.current, 2);
  // Best fit among the free [0, 2) and [6, 20) MiB: the 2 MiB hole, taken whole (slack <= 1 MiB).
  const Block a = f.alloc(1 * MiB + 1);
  EXPECT_EQ(a.address, *segment);
  EXPECT_EQ(a.size, 2 * MiB);
  EXPECT_EQ(f.counters().malloc_calls, 1u);
  EXPECT_FALSE(f.policy.adopt_block(*segment + 100 * MiB, 1 * MiB, 1, 0).has_value());
  f.policy.free(live->address, 0);
  f.policy.free(a.address, 0);
  f.policy.empty_cache();
  EXPECT_EQ(f.counters().reserved_bytes, 0u);
}

// ---- invariants over random programs --------------------------------------------------------------

TEST(PytorchPolicyInvariants, RandomProgramsKeepTheBooksBalanced) {
  for (const std::string conf : {"", "expandable_segments:True", "max_split_size_mb:32", "roundup_power2_divisions:4",
                                 "garbage_collection_threshold:0.6"}) {
    Fixture f(conf, /*capacity=*/2048 * MiB);
    std::mt19937_64 rng(42);
    struct Live {
      Block block;
      uint64_t requested;
    };
    std::vector<Live> live;
    uint64_t allocated = 0;
    uint64_t requested = 0;
    for (int step = 0; step < 4000; ++step) {
      if (live.empty() || rng() % 100 < 55) {
        const uint64_t bytes = rng() % 4 == 0 ? 1 + rng() % (64 * MiB) : 1 + rng() % (1 * MiB);
        const StreamId stream = rng() % 3;
        if (const auto block = f.policy.allocate(bytes, stream)) {
          EXPECT_GE(block->size, bytes);
          live.push_back({*block, bytes});
          allocated += block->size;
          requested += bytes;
        }
      } else {
        const size_t i = rng() % live.size();
        f.policy.free(live[i].block.address, 0);
        allocated -= live[i].block.size;
        requested -= live[i].requested;
        live[i] = live.back();
        live.pop_back();
      }
      if (step % 500 == 0) f.policy.empty_cache();
      // The Device's counts (the policy keeps none): reserved = what is backed, and without
      // expandable segments one live cudaMalloc per segment the policy holds.
      uint64_t backed = 0;
      for (const auto& [start, end] : f.device.backed_ranges()) backed += end - start;
      ASSERT_EQ(f.counters().reserved_bytes, backed) << conf;
      if (!f.policy.config().expandable_segments)
        ASSERT_EQ(f.counters().malloc_calls - f.counters().free_calls, static_cast<uint64_t>(f.stats().segment.current))
            << conf;
      ASSERT_EQ(f.stats().allocated_bytes.current, static_cast<int64_t>(allocated)) << conf;
      ASSERT_EQ(f.stats().requested_bytes.current, static_cast<int64_t>(requested)) << conf;
      ASSERT_GE(f.counters().reserved_bytes, allocated) << conf;
    }
    // No two live blocks overlap.
    std::sort(live.begin(), live.end(), [](const Live& a, const Live& b) { return a.block.address < b.block.address; });
    for (size_t i = 1; i < live.size(); ++i)
      ASSERT_LE(live[i - 1].block.address + live[i - 1].block.size, live[i].block.address) << conf;
    for (const Live& l : live) f.policy.free(l.block.address, 0);
    f.policy.empty_cache();
    EXPECT_EQ(f.counters().reserved_bytes, 0u) << conf;
    EXPECT_EQ(f.stats().inactive_split_bytes.current, 0) << conf;
    EXPECT_EQ(f.counters().malloc_calls, f.counters().free_calls) << conf;
    EXPECT_EQ(f.counters().reserved_bytes_allocated, f.counters().reserved_bytes_freed) << conf;
    const auto named = stats_by_name(f.policy.stats(), f.counters());
    EXPECT_EQ(named.at("num_device_alloc"), f.device_allocs()) << conf;
    EXPECT_EQ(named.at("reserved_bytes.all.peak"), f.counters().reserved_peak) << conf;
  }
}

}  // namespace
}  // namespace memreplay::pytorch
