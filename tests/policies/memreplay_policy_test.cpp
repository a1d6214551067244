// The `memreplay` policy against its targets, on every real trace:
//   reserved peak          <= 1.02 x requested peak
//   smallest fitting cap   <= 1.01 x requested peak
//   device calls           <= max(PyTorch default's (cudaMalloc + map, cudaFree + unmap),
//                                 ceil(1.25 x the floor with one page of slack))
//   a periodic trace (training steps that repeat the same allocations) makes no device call
//   after its second step
// The floor is the fewest growth calls any policy needs to stay within 1.02 x
// (tests/support/growth_bound.h, docs/memreplay-policy.md); steps are the optimizer-step markers
// the traces carry (tests/support/step_calls.h). Where the calls target is missed, kKnownCallsGaps
// holds the measured calls as a ceiling (so that a regression fails) and the test asserts that the
// target is still missed (so that the list stays true). It prints, per trace, floor / PyTorch /
// memreplay, the bound, the calls after step 2, and the reserved and smallest-fit ratios.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

#include "base/units.h"
#include "policies/memreplay/vmm_arena.h"
#include "policies/registry.h"
#include "replayer/replay_runner.h"
#include "replayer/sim/sim_device.h"
#include "tests/support/groundtruth_rows.h"
#include "tests/support/growth_bound.h"
#include "tests/support/step_calls.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

// Device calls (maps + unmaps) where they are above calls_bound(): growth in steps of 1/64 of the
// high-water mark where the floor grows by 2% and a page (gpt2_generate, gpt2_train), and on
// vit_infer_varbatch moves of cached pages that each batch size's blocks find in holes of the
// wrong size (docs/memreplay-policy.md, "Where the calls go").
const std::map<std::string, uint64_t> kKnownCallsGaps = {
    {"gpt2_generate.default", 74},
    {"vit_infer_varbatch.default", 217},
};

// Device calls after the second step where there are any: the ring-buffer trace starts mid-run,
// from the blocks it adopts, and makes one map in its second whole step.
const std::map<std::string, uint64_t> kKnownStepGaps = {{"gpt2_train.truncated", 1}};

// The traces whose steps repeat the same allocations (step_calls.h): GPT-2 and ResNet-50 training.
bool is_training(const std::string& trace) {
  return trace.starts_with("gpt2_train.") || trace.starts_with("resnet50_train.");
}

// The calls target: PyTorch default's calls, or a quarter above the fewest growth calls that any
// policy within 1.02 x needs (where even that floor is above PyTorch's, no policy can match them).
uint64_t calls_bound(uint64_t pytorch_calls, uint64_t page_slack_floor) {
  return std::max(pytorch_calls, (5 * page_slack_floor + 3) / 4);
}

// Takes `bytes` where place() puts it (the calls-first rule) and returns its address.
uint64_t take_placed(detail::VmmArena& arena, uint64_t bytes, suballoc::Range** handle = nullptr) {
  const auto placement = arena.place(bytes, false);
  suballoc::Range* range = arena.take(*placement, bytes);
  if (handle != nullptr) *handle = range;
  return placement->address;
}

// Takes blocks of `sizes` one after another, each where place() puts it; returns their ranges.
std::vector<suballoc::Range*> take_in_a_row(detail::VmmArena& arena, std::initializer_list<uint64_t> sizes) {
  std::vector<suballoc::Range*> blocks;
  for (const uint64_t bytes : sizes) take_placed(arena, bytes, &blocks.emplace_back());
  return blocks;
}

// GIVEN live blocks [0,2) [4,5) [7.5,8) MiB and free [2,4) (a whole cached page) and [5,7.5) (two
// pages that live blocks already touch), WHEN a 1 MiB block is placed, THEN the calls-first rule
// takes the cached page (best fit, nothing to map) and pins a page more, while the footprint rule
// takes the hole inside pinned pages: under a cap the pinned pages are what must fit.
TEST(VmmArenaPlacement, UnderACapASmallBlockGoesIntoPagesThatLiveBlocksAlreadyPin) {
  SimDevice device(SimDevice::Options{});
  detail::VmmArena arena(device, 64 * kMiB);
  const auto blocks = take_in_a_row(arena, {2 * kMiB, 2 * kMiB, 1 * kMiB, 5 * kMiB / 2, kMiB / 2});
  const uint64_t base = blocks[0]->start;
  arena.give_back(blocks[1]);  // the cached page
  arena.give_back(blocks[3]);  // the hole
  ASSERT_EQ(arena.mapped_bytes(), 8 * kMiB);
  ASSERT_EQ(arena.pinned_bytes(), 6 * kMiB) << "pages 0, 2 and 3";

  EXPECT_EQ(arena.place(kMiB, false)->address, base + 2 * kMiB);
  const auto tight = arena.place_tightest(kMiB);
  ASSERT_TRUE(tight);
  EXPECT_EQ(tight->address, base + 5 * kMiB);
  EXPECT_EQ(tight->new_bytes, 0u);
  arena.take(*tight, kMiB);
  EXPECT_EQ(arena.pinned_bytes(), 6 * kMiB) << "no page more pinned";
  EXPECT_EQ(arena.mapped_bytes(), 8 * kMiB);
}

// GIVEN cached free runs of 3 and 6 pages between live blocks, WHEN 1 page must go, THEN the
// 3-page run (the smallest that holds it) is unmapped whole, in one call: a run cut in part is cut
// again by the next move, a call each time.
TEST(VmmArenaReclaim, OneCallUnmapsTheWholeSmallestRunThatHoldsWhatMustGo) {
  SimDevice device(SimDevice::Options{});
  detail::VmmArena arena(device, 64 * kMiB);
  const auto blocks = take_in_a_row(arena, {2 * kMiB, 6 * kMiB, 2 * kMiB, 12 * kMiB, 2 * kMiB});
  arena.give_back(blocks[1]);  // the small run
  arena.give_back(blocks[3]);  // the large run
  ASSERT_EQ(arena.mapped_bytes(), 24 * kMiB);
  const uint64_t unmaps = device.counters().unmap_calls;
  EXPECT_EQ(arena.reclaim(2 * kMiB), 6 * kMiB);
  EXPECT_EQ(device.counters().unmap_calls, unmaps + 1);
  EXPECT_EQ(arena.mapped_bytes(), 18 * kMiB);
  // More than any one run holds: the largest runs first, until none is left.
  EXPECT_EQ(arena.reclaim(14 * kMiB), 12 * kMiB) << "only the 6-page run was left";
  EXPECT_EQ(arena.mapped_bytes(), 6 * kMiB) << "the live blocks' pages";
}

// GIVEN cached runs of 3 and 6 pages, WHEN a reclaim keeps a plan's pages (the larger run and one
// page of the smaller), THEN only the smaller run's other pages go, and a placement at a planned
// address inside the kept run costs nothing (place_in), where one outside any free range fails.
TEST(VmmArenaReclaim, APlansPagesStayMapped) {
  SimDevice device(SimDevice::Options{});
  detail::VmmArena arena(device, 64 * kMiB);
  const auto blocks = take_in_a_row(arena, {2 * kMiB, 6 * kMiB, 2 * kMiB, 12 * kMiB, 2 * kMiB});
  const uint64_t small_run = blocks[1]->start;
  const uint64_t large_run = blocks[3]->start;
  arena.give_back(blocks[1]);
  arena.give_back(blocks[3]);
  detail::IntervalSet plan_pages;
  plan_pages.insert(small_run, small_run + 2 * kMiB);
  plan_pages.insert(large_run, large_run + 12 * kMiB);
  EXPECT_EQ(arena.reclaim(UINT64_MAX, 0, 0, &plan_pages), 4 * kMiB) << "the small run's two unkept pages";
  EXPECT_EQ(arena.mapped_bytes(), 20 * kMiB);
  const suballoc::Range* free_range = blocks[2]->right;
  ASSERT_TRUE(free_range != nullptr && free_range->free);
  const auto planned = arena.place_in(free_range, large_run + 4 * kMiB, 4 * kMiB);
  ASSERT_TRUE(planned);
  EXPECT_EQ(planned->new_bytes, 0u);
  EXPECT_FALSE(arena.place_in(free_range, large_run + 10 * kMiB, 4 * kMiB)) << "past the free range's end";
  EXPECT_FALSE(arena.place_in(blocks[2], blocks[2]->start, 512)) << "a live block is no free range";
}

// GIVEN a cached 3-page run that a 6 MiB placement finds all mapped, WHEN the run is unmapped,
// THEN the same placement needs its 6 MiB of pages mapped again: what the arena remembers as
// mapped (to skip a B-tree lookup per candidate) must not outlive an unmap.
TEST(VmmArenaPlacement, PagesAReclaimUnmappedCostAMapAgain) {
  SimDevice device(SimDevice::Options{});
  detail::VmmArena arena(device, 64 * kMiB);
  arena.give_back(take_in_a_row(arena, {2 * kMiB, 6 * kMiB, 2 * kMiB})[1]);
  const auto cached = arena.place(6 * kMiB, false);
  ASSERT_TRUE(cached);
  EXPECT_EQ(cached->new_bytes, 0u);
  ASSERT_EQ(arena.reclaim(6 * kMiB), 6 * kMiB);
  const auto unmapped = arena.place(6 * kMiB, false);
  ASSERT_TRUE(unmapped);
  EXPECT_EQ(unmapped->address, cached->address) << "still the best fit";
  EXPECT_EQ(unmapped->new_bytes, 6 * kMiB);
}

// GIVEN live blocks [0,2) and [6,8) MiB around a cached 4 MiB hole, and the free tail from 8 MiB
// with pages mapped up to 12 MiB, WHEN blocks are placed that cost no new page in either, THEN a
// 3 MiB block goes to the tail (what it leaves there is growth room, where in the hole it would
// strand 1 MiB between live blocks), a 4 MiB one fills the hole exactly, and the tail, now from
// 11 MiB, still places free of cost up to its first unmapped page.
TEST(VmmArenaPlacement, ABlockGoesWhereItsRemainderCanGrowUnlessAHoleFitsItExactly) {
  SimDevice device(SimDevice::Options{});
  detail::VmmArena arena(device, 64 * kMiB);
  const auto blocks = take_in_a_row(arena, {2 * kMiB, 4 * kMiB, 2 * kMiB, 4 * kMiB});
  const uint64_t base = blocks[0]->start;
  arena.give_back(blocks[3]);  // the tail's first pages
  arena.give_back(blocks[1]);  // the hole
  ASSERT_EQ(arena.mapped_bytes(), 12 * kMiB);

  const auto growing = arena.place(3 * kMiB, false);
  ASSERT_TRUE(growing);
  EXPECT_EQ(growing->address, base + 8 * kMiB) << "the tail, not the tighter hole";
  EXPECT_EQ(growing->new_bytes, 0u);
  arena.take(*growing, 3 * kMiB);
  EXPECT_EQ(take_placed(arena, 4 * kMiB), base + 2 * kMiB) << "the hole it fills exactly";
  const auto rest = arena.place(kMiB, false);
  ASSERT_TRUE(rest);
  EXPECT_EQ(rest->address, base + 11 * kMiB);
  EXPECT_EQ(rest->new_bytes, 0u);
  const auto past = arena.place(2 * kMiB, false);
  ASSERT_TRUE(past);
  EXPECT_EQ(past->new_bytes, 2 * kMiB) << "page 12 is not mapped";
  EXPECT_EQ(arena.mapped_bytes(), 12 * kMiB);
}

// In a CUDA graph's private pool nothing goes back while the pool lives (policies/private_pools.h),
// so moving a page there only adds one: the policy's instance for the pool maps and never moves.
// Blocks of changing sizes freed and made again, as a capture's temporaries are: in the default
// pool the same requests make the policy move pages; in the pool nothing is unmapped, and its
// reserved peak is what the blocks need, not that plus every page a move left behind.
TEST(MemreplayPolicyPrivatePool, MovesNoPageWhereNothingGoesBack) {
  struct Run {
    uint64_t unmaps, maps, reserved_peak;
  };
  const auto run = [](PoolId pool) {
    SimDevice device(SimDevice::Options{});
    const auto policy = PolicyRegistry::instance().create("memreplay", device);
    std::vector<uint64_t> held;
    for (int i = 0; i < 60; ++i) {
      const uint64_t bytes = (8 + (i * 37) % 90) * kMiB + 4096;
      held.push_back(policy->allocate_in_pool(bytes, 0, pool)->address);
      if (held.size() > 3) {
        policy->free(held.front(), 0);
        held.erase(held.begin());
      }
    }
    const DeviceCounters& c = device.counters();
    return Run{c.unmap_calls, c.map_calls, c.reserved_peak};
  };
  const Run eager = run(0), pooled = run(1);
  const uint64_t requested_peak = 282 * kMiB + 4 * 4096;  // four blocks live at most
  EXPECT_GT(eager.unmaps, 0u) << "the default pool moves pages on this workload";
  EXPECT_EQ(pooled.unmaps, 0u);
  EXPECT_LT(pooled.maps, eager.maps + eager.unmaps) << "fewer calls than moving";
  // Measured: 330 MiB (1.17 x); moving as in the default pool held 446 MiB (1.58 x) in the pool.
  EXPECT_LT(pooled.reserved_peak, requested_peak + requested_peak / 4);
  std::printf("private pool: %llu maps, reserved peak %.1f MiB; default pool: %llu maps + %llu unmaps, %.1f MiB\n",
              static_cast<unsigned long long>(pooled.maps), pooled.reserved_peak / double(kMiB),
              static_cast<unsigned long long>(eager.maps), static_cast<unsigned long long>(eager.unmaps),
              eager.reserved_peak / double(kMiB));
}

// GIVEN a periodic workload (five long-lived blocks, then steps that each make the same 40
// requests of 0.5 to 24.5 MiB, most not a whole number of pages, freed 1 to 6 requests later or at
// the step's end, in a different order than allocated: the placement pressure varies within a
// step), WHEN it runs 12 steps, THEN after the second step the policy makes no device call (no
// unmap, no map) and its reserved peak does not grow: a step that repeats one that already
// reached the reserved peak maps what it needs up to that peak instead of moving cached pages
// (an unmap that waits for the GPU, and a map). With the reclaim line at 1/53 above the live
// high-water mark alone, the same workload makes 23 unmaps and 16 maps after its second step (as
// it did at 1/52). Not every periodic workload reaches zero: of 30 generated as this one is (other
// seeds), the rule lowered the calls after the second step on 22 and by 24% in all (measured with
// the line at 1/52); this one guards the mechanism, not a bound.
TEST(MemreplayPolicySteadyState, APeriodicWorkloadMovesNoPageAfterItsSecondStep) {
  uint64_t x = 7 * 0x9E3779B97F4A7C15ull;  // xorshift64: the same workload every run
  const auto next = [&x](uint64_t n) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x % n;
  };
  constexpr int kRequests = 40;
  std::vector<uint64_t> sizes(kRequests);
  std::vector<int> lifetime(kRequests);  // in requests; kRequests: to the step's end
  for (int i = 0; i < kRequests; ++i) {
    sizes[i] = (1 + next(48)) * (kMiB / 2) + 512 * next(3);
    lifetime[i] = next(4) == 0 ? kRequests : 1 + static_cast<int>(next(6));
  }
  SimDevice device(SimDevice::Options{});
  const auto policy = PolicyRegistry::instance().create("memreplay", device);
  uint64_t live = 0;
  uint64_t requested_peak = 0;
  const auto allocate = [&](uint64_t bytes) {
    const auto block = policy->allocate(bytes, 0);
    EXPECT_TRUE(block);
    live += bytes;
    requested_peak = std::max(requested_peak, live);
    return block ? block->address : 0;
  };
  for (int i = 0; i < 5; ++i) allocate((3 + next(20)) * kMiB + 4096);  // kept to the end
  DeviceCounters after_step_2;
  for (int step = 0; step < 12; ++step) {
    struct Held {
      int freed_before;  // the request of this step before which it is freed
      uint64_t address, bytes;
    };
    std::vector<Held> blocks;
    const auto free_block = [&](const Held& block) {
      policy->free(block.address, 0);
      live -= block.bytes;
    };
    for (int i = 0; i < kRequests; ++i) {
      std::erase_if(blocks, [&](const Held& block) {
        if (block.freed_before > i) return false;
        free_block(block);
        return true;
      });
      blocks.push_back({i + lifetime[i], allocate(sizes[i]), sizes[i]});
    }
    for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) free_block(*it);
    if (step == 1) after_step_2 = device.counters();
  }
  const DeviceCounters& end = device.counters();
  EXPECT_GT(after_step_2.unmap_calls, 0u) << "the first steps move pages: the workload has placement pressure";
  EXPECT_EQ(end.unmap_calls, after_step_2.unmap_calls) << "unmaps after the second step";
  EXPECT_EQ(end.map_calls, after_step_2.map_calls) << "maps after the second step";
  EXPECT_EQ(end.reserved_peak, after_step_2.reserved_peak) << "the later steps raise the reserved peak";
  // At 213 MiB of requests one page is 0.9% of the peak: the pages that live blocks share with
  // holes take this workload past 1.02 x under any placement the policy tries, so only the
  // reserved peak's growth is checked.
  EXPECT_GT(requested_peak, 200 * kMiB);
}

std::vector<std::string> traces() { return testing::real_data_names("traces", ".pickle.xz"); }

TEST(MemreplayPolicySharedSet, EveryTraceOfTheSharedSetIsCovered) {
  testing::real_data_path("traces");  // fails, naming the folder, when the data is missing
  EXPECT_EQ(traces().size(), 9u);
}

class MemreplayPolicyTargets : public ::testing::TestWithParam<std::string> {};

TEST_P(MemreplayPolicyTargets, ReservedMinFitAndDeviceCalls) {
  ReplayOptions options;
  options.trace_path = testing::imported_trace(GetParam());
  options.policy_spec = "pytorch";
  const ReplayMetrics pytorch = run_replay(options);
  options.policy_spec = "memreplay";
  const FitResult fit = find_min_capacity(options, 1 << 20);
  const ReplayMetrics& ours = fit.uncapped;
  ASSERT_FALSE(ours.oom_at_event);
  const double requested = static_cast<double>(ours.requested_peak);
  ASSERT_EQ(ours.requested_peak, pytorch.requested_peak);

  const double reserved_ratio = static_cast<double>(ours.reserved_peak) / requested;
  EXPECT_LE(reserved_ratio, 1.02) << "reserved peak target";

  const double fit_ratio = static_cast<double>(fit.min_fit_bytes) / requested;
  EXPECT_LE(fit_ratio, 1.01) << "smallest fitting capacity";
  // The cap the bisection found really fits, and one resolution step below it does not.
  ReplayOptions capped = options;
  capped.capacity = fit.min_fit_bytes;
  EXPECT_FALSE(run_replay(capped).oom_at_event);

  const uint64_t our_calls = ours.device_alloc_calls + ours.device_free_calls;
  const uint64_t their_calls = pytorch.device_alloc_calls + pytorch.device_free_calls;
  // The floor in growth calls (tests/support/growth_bound.h). The strict one assumes mapped
  // bytes <= 1.02 x the live high-water mark at every moment; a policy that maps whole 2 MiB pages
  // does not keep that early on (on resnet50_train the tip mapped 1088 MiB at H = 1059.6 MiB,
  // 1.0268 x, docs/memreplay-policy.md), so only the floor with one page of slack
  // at every moment is a lower bound for ours; both are printed.
  const std::vector<uint64_t> live = testing::live_curve(read_lifetimes(options.trace_path));
  const uint64_t bound = testing::min_growth_calls(live);
  const uint64_t page_slack_bound = testing::min_growth_calls(live, 2u << 20);
  EXPECT_GE(ours.device_alloc_calls, page_slack_bound) << "memreplay left the 1.02 x line by more than a page";
  const uint64_t most_calls = calls_bound(their_calls, page_slack_bound);
  if (const auto gap = kKnownCallsGaps.find(GetParam()); gap == kKnownCallsGaps.end()) {
    EXPECT_LE(our_calls, most_calls) << "device calls";
  } else {
    EXPECT_LE(our_calls, gap->second) << "device calls ceiling";
    // The list says where the target is missed, no more: a trace that meets it leaves the list.
    EXPECT_GT(our_calls, most_calls) << "the calls target is met now: take it off kKnownCallsGaps";
  }

  const testing::StepCalls steps = testing::replay_counting_steps(options);
  EXPECT_EQ(steps.calls, our_calls) << "the step-by-step replay is the same replay";
  ASSERT_EQ(steps.periodic(), is_training(GetParam())) << "periodic traces: the training runs";
  if (const auto gap = kKnownStepGaps.find(GetParam()); steps.periodic() && gap == kKnownStepGaps.end()) {
    EXPECT_EQ(steps.calls_after_step(2), 0u) << "device calls after the second step";
  } else if (steps.periodic()) {
    EXPECT_LE(steps.calls_after_step(2), gap->second) << "device calls after the second step: ceiling";
    EXPECT_GT(steps.calls_after_step(2), 0u) << "no call after step 2 now: take it off kKnownStepGaps";
  }

  std::printf(
      "%-30s floor %4llu (one page of slack: %4llu) | pytorch %4llu (%llu + %llu) | memreplay %4llu (%llu + %llu) | "
      "bound %4llu | after step 2: %s | reserved %.4f x, smallest fit %.4f x\n",
      GetParam().c_str(), static_cast<unsigned long long>(bound), static_cast<unsigned long long>(page_slack_bound),
      static_cast<unsigned long long>(their_calls), static_cast<unsigned long long>(pytorch.device_alloc_calls),
      static_cast<unsigned long long>(pytorch.device_free_calls), static_cast<unsigned long long>(our_calls),
      static_cast<unsigned long long>(ours.device_alloc_calls), static_cast<unsigned long long>(ours.device_free_calls),
      static_cast<unsigned long long>(most_calls),
      steps.periodic() ? std::to_string(steps.calls_after_step(2)).c_str() : "(not periodic)", reserved_ratio,
      fit_ratio);
  RecordProperty("growth_bound", std::to_string(bound));
  RecordProperty("reserved_ratio", std::to_string(reserved_ratio));
  RecordProperty("min_fit_ratio", std::to_string(fit_ratio));
  RecordProperty("device_calls", std::to_string(our_calls) + " vs bound " + std::to_string(most_calls));
}

INSTANTIATE_TEST_SUITE_P(SharedTraces, MemreplayPolicyTargets, ::testing::ValuesIn(traces()),
                         testing::RowNamePrinter());

}  // namespace
}  // namespace memreplay
