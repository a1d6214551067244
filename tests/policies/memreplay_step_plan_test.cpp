// The memreplay policy's plan for a repeating run (rule 5): the period detector, the packing, and
// the policy on generated training loops, each checked against what it claims by brute force.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <vector>

#include "base/units.h"
#include "policies/memreplay/period_detector.h"
#include "policies/memreplay/step_plan.h"
#include "policies/registry.h"
#include "replayer/sim/sim_device.h"

namespace memreplay {
namespace {

using detail::PeriodDetector;
using detail::StepPlan;

// xorshift64: the same sequence every run.
struct Random {
  uint64_t x;
  uint64_t operator()(uint64_t n) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x % n;
  }
};

// A training-like step: `layers` repeats of the same few sizes (the inner repeat a detector must
// not stop at), then a head and an optimizer part of other sizes.
std::vector<uint64_t> step_sizes(Random& random, int layers) {
  std::vector<uint64_t> layer;
  for (int i = 0; i < 5; ++i) layer.push_back((1 + random(64)) * 4096);
  std::vector<uint64_t> step;
  for (int l = 0; l < layers; ++l) step.insert(step.end(), layer.begin(), layer.end());
  for (int i = 0; i < 20; ++i) step.push_back((1 + random(4096)) * 512);
  return step;
}

TEST(PeriodDetector, FindsTheStepNotTheLayerAndEachPlacesLifetime) {
  Random random{0x9E3779B97F4A7C15ull};
  const std::vector<uint64_t> step = step_sizes(random, 12);
  const uint64_t period = step.size();
  // Each place's lifetime in allocations; every seventh place outlives its step (a gradient
  // freed when the next step makes it again, and one that lives two steps).
  std::vector<uint64_t> lifetime(period);
  for (uint64_t i = 0; i < period; ++i) lifetime[i] = i % 7 == 0 ? period + period / 2 : 1 + random(20);
  PeriodDetector detector;
  std::multimap<uint64_t, uint64_t> frees;  // before allocation -> seq
  for (uint64_t seq = 0; seq < 6 * period; ++seq) {
    for (auto due = frees.begin(); due != frees.end() && due->first <= seq; due = frees.erase(due))
      detector.on_free(due->second);
    ASSERT_EQ(detector.on_allocate(step[seq % period], step[seq % period], 0), seq);
    frees.emplace(seq + lifetime[seq % period], seq);
  }
  ASSERT_EQ(detector.period(), period);
  EXPECT_GE(detector.matched(), 2 * period);
  const auto last = detector.last_period();
  ASSERT_EQ(last.size(), period);
  for (uint64_t i = 0; i < period; ++i) {
    EXPECT_EQ(last[i].bytes, step[i]) << i;
    EXPECT_EQ(last[i].lifetime, lifetime[i]) << "place " << i;
  }

  // A departure from the sequence ends the period.
  detector.on_allocate(12345 * 512, 12345 * 512, 0);
  EXPECT_EQ(detector.period(), 0u);
}

TEST(PeriodDetector, ARunThatDoesNotRepeatHasNoPeriodAndBoundedHistory) {
  Random random{42};
  PeriodDetector detector;
  // Three times the history: old allocations leave it, and their frees are ignored.
  const uint64_t count = 3 * PeriodDetector::kHistory;
  for (uint64_t seq = 0; seq < count; ++seq) {
    detector.on_allocate(random(1 << 20) * 512, 512, 0);
    if (seq >= 8) detector.on_free(seq - 8);
  }
  detector.on_free(0);  // long gone: no effect, no crash
  EXPECT_EQ(detector.period(), 0u);
  EXPECT_EQ(detector.allocations(), count);
}

// A generated period for plan_step: sizes and lifetimes, some outliving the period.
std::vector<PeriodDetector::Allocation> generated_period(Random& random, uint64_t length) {
  std::vector<PeriodDetector::Allocation> period;
  for (uint64_t i = 0; i < length; ++i) {
    const uint64_t lifetime = random(5) == 0 ? length - random(length / 4) + random(length) : 1 + random(12);
    period.push_back({i, (1 + random(1 << 13)) * 512, lifetime});
  }
  return period;
}

detail::StepPlanInput input_for(std::vector<PeriodDetector::Allocation> period, uint64_t page) {
  detail::StepPlanInput input;
  input.period = std::move(period);
  input.page = page;
  input.hi = UINT64_C(1) << 40;
  return input;
}

TEST(StepPlan, NoTwoSlotsLiveTogetherOverlapAndEachKnowsTheBlockBelowIt) {
  constexpr uint64_t kPage = 2 * kMiB;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    Random random{seed * 0x2545F4914F6CDD1Dull};
    const uint64_t length = 50 + random(150);
    const auto period = generated_period(random, length);
    uint64_t copies = 1;
    for (const auto& allocation : period) copies = std::max(copies, (allocation.lifetime + length - 1) / length);
    const uint64_t lo = 64 * kPage;
    const std::vector<detail::StepPlanInput::Extent> long_lived = {{kPage, kPage + 3 * kMiB},
                                                                   {10 * kPage, 10 * kPage + 512}};
    const auto plan = detail::plan_step({.period = period,
                                         .copies = copies,
                                         .long_lived = long_lived,
                                         .first_seq = 1000,
                                         .page = kPage,
                                         .lo = lo,
                                         .hi = UINT64_C(1) << 40});
    ASSERT_TRUE(plan) << "seed " << seed;
    const uint64_t circle = length * copies;
    ASSERT_EQ(plan->slots.size(), circle);
    const auto live_at = [&](uint64_t slot, uint64_t time) {
      return (time + circle - slot) % circle < period[slot % length].lifetime;
    };
    for (uint64_t a = 0; a < circle; ++a) {
      const StepPlan::Slot& slot = plan->slots[a];
      EXPECT_GE(slot.address, lo);
      EXPECT_EQ(slot.bytes, period[a % length].bytes);
      EXPECT_TRUE(
          plan->pages.holds(slot.address / kPage * kPage, (slot.address + slot.bytes + kPage - 1) / kPage * kPage));
      // Brute force: no slot live at the same time overlaps it; the block below is the highest
      // one live when it is allocated (the highest long-lived one when no slot is).
      uint64_t below = 10 * kPage;
      for (uint64_t b = 0; b < circle; ++b) {
        if (b == a) continue;
        const StepPlan::Slot& other = plan->slots[b];
        if (live_at(a, b) || live_at(b, a))
          ASSERT_FALSE(other.address < slot.address + slot.bytes && slot.address < other.address + other.bytes)
              << "seed " << seed << ": slots " << a << " and " << b << " overlap while both live";
        if (live_at(b, a) && other.address < slot.address) below = std::max(below, other.address);
      }
      EXPECT_EQ(slot.below, below) << "seed " << seed << ", slot " << a;
    }
    for (const auto& extent : long_lived)
      EXPECT_TRUE(plan->pages.holds(extent.start / kPage * kPage, (extent.end + kPage - 1) / kPage * kPage));
  }
}

TEST(StepPlan, ABlockThatDoesNotOutliveItsPeriodKeepsOnePlaceInEveryCopy) {
  Random random{7};
  std::vector<PeriodDetector::Allocation> period = generated_period(random, 80);
  for (auto& allocation : period) allocation.lifetime = std::min<uint64_t>(allocation.lifetime, 10);
  detail::StepPlanInput input = input_for(period, 2 * kMiB);
  input.copies = 2;
  const auto plan = detail::plan_step(input);
  ASSERT_TRUE(plan);
  for (uint64_t i = 0; i < 80; ++i) EXPECT_EQ(plan->slots[i].address, plan->slots[80 + i].address) << i;

  input.period[3].lifetime = 120;  // outlives its period: both copies live at once
  const auto outliving = detail::plan_step(input);
  ASSERT_TRUE(outliving);
  EXPECT_NE(outliving->slots[3].address, outliving->slots[80 + 3].address);
}

TEST(StepPlan, RefusesAPeriodItCannotPlan) {
  Random random{9};
  detail::StepPlanInput input = input_for(generated_period(random, 100), 2 * kMiB);
  for (auto& allocation : input.period) allocation.lifetime = std::min<uint64_t>(allocation.lifetime, 10);
  ASSERT_TRUE(detail::plan_step(input));
  input.copies = StepPlan::kMaxSlots / 100 + 1;
  EXPECT_FALSE(detail::plan_step(input)) << "more slots than kMaxSlots";
  input.copies = 1;
  input.period[5].lifetime = PeriodDetector::kNotFreed;
  EXPECT_FALSE(detail::plan_step(input)) << "a lifetime not known";
  input.period[5].lifetime = 150;
  EXPECT_FALSE(detail::plan_step(input)) << "outlives its copies";
  input.period[5].lifetime = 10;
  input.hi = kMiB;  // below the largest block
  EXPECT_FALSE(detail::plan_step(input)) << "no room below hi";
  input.hi = UINT64_C(1) << 40;
  input.pinned = {{3, 4096}, {3, 8192}};
  EXPECT_FALSE(detail::plan_step(input)) << "one slot pinned twice";
}

TEST(StepPlan, PinnedSlotsKeepTheirAddressAndObservedOnesAreKeptWhereTheyStillFit) {
  Random random{11};
  detail::StepPlanInput input{
      .period = generated_period(random, 60), .page = 2 * kMiB, .lo = 0, .hi = UINT64_C(1) << 40};
  for (auto& allocation : input.period) allocation.lifetime = std::min<uint64_t>(allocation.lifetime, 8);
  // A layout the run used: every block at its own address, far apart (no conflict anywhere).
  input.observed.resize(60);
  for (uint64_t slot = 0; slot < 60; ++slot) input.observed[slot] = (1 + slot) * 64 * kMiB;
  input.pinned = {{59, 5000 * kMiB}};
  const auto plan = detail::plan_step(input);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->slots[59].address, 5000 * kMiB);
  for (uint64_t slot = 0; slot < 59; ++slot) EXPECT_EQ(plan->slots[slot].address, input.observed[slot]) << slot;
  // Two observed places that collide while both live: the smaller block moves.
  input.observed[1] = input.observed[0];
  input.period[0].lifetime = 5;  // live when slot 1 is allocated
  const auto moved = detail::plan_step(input);
  ASSERT_TRUE(moved);
  const uint64_t larger = input.period[0].bytes >= input.period[1].bytes ? 0 : 1;
  EXPECT_EQ(moved->slots[larger].address, input.observed[0]);
  EXPECT_NE(moved->slots[1 - larger].address, input.observed[0]);
}

TEST(StepPlan, GivenTheMappedPagesASlotGoesOnThemAndAnObservedPlaceOffThemIsNotKept) {
  constexpr uint64_t kPage = 2 * kMiB;
  // Two blocks that never live together: both fit at the bottom, where nothing is mapped.
  detail::StepPlanInput input{
      .period = {{1, 3 * kMiB, 1}, {2, 3 * kMiB, 1}}, .page = kPage, .lo = 0, .hi = UINT64_C(1) << 40};
  const auto unmapped = detail::plan_step(input);
  ASSERT_TRUE(unmapped);
  EXPECT_EQ(unmapped->slots[0].address, 0u);
  EXPECT_EQ(unmapped->slots[1].address, 0u);
  detail::IntervalSet mapped;
  mapped.insert(10 * kPage, 12 * kPage);  // one run of two pages: room for one 3 MiB block
  input.mapped = &mapped;
  input.observed = {0, 40 * kPage};  // the second was seen on pages not mapped now
  const auto plan = detail::plan_step(input);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->slots[0].address, 10 * kPage);
  EXPECT_EQ(plan->slots[1].address, 10 * kPage) << "not where it was seen: those pages are not mapped";
  mapped.insert(40 * kPage, 42 * kPage);
  const auto kept = detail::plan_step(input);
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->slots[1].address, 40 * kPage) << "seen on mapped pages: kept";
}

// Generated training loops: weights kept, a step of activations, gradients that live until the
// next step makes them again, and a small block that lives two steps. Every block is checked
// against every live block (no overlap), and the device calls of each step are counted.
struct LoopResult {
  std::vector<uint64_t> calls_by_step;  // maps + unmaps after each step
  uint64_t reserved_peak = 0;
  uint64_t requested_peak = 0;
};

// `deviate_every` (0: never): from the tenth step on, every such step makes one request more in
// the middle of its forward pass (512 B and 24 MiB in turn, freed at once: a logged metric), and
// the step halfway between skips one of its temporary activations.
LoopResult run_training_loop(uint64_t seed, int steps, int deviate_every = 0) {
  Random random{seed * 0x9E3779B97F4A7C15ull};
  SimDevice device(SimDevice::Options{});
  const auto policy = PolicyRegistry::instance().create("memreplay", device);
  std::map<uint64_t, uint64_t> live;  // address -> bytes, for the overlap check
  uint64_t live_bytes = 0;
  LoopResult result;
  const auto allocate = [&](uint64_t bytes) {
    const auto block = policy->allocate(bytes, 0);
    EXPECT_TRUE(block);
    if (!block) return uint64_t{0};
    const auto next = live.lower_bound(block->address);
    EXPECT_TRUE(next == live.end() || block->address + bytes <= next->first) << "overlaps the block above";
    EXPECT_TRUE(next == live.begin() || std::prev(next)->first + std::prev(next)->second <= block->address)
        << "overlaps the block below";
    live.emplace(block->address, bytes);
    live_bytes += bytes;
    result.requested_peak = std::max(result.requested_peak, live_bytes);
    return block->address;
  };
  const auto release = [&](uint64_t address) {
    live_bytes -= live.at(address);
    live.erase(address);
    policy->free(address, 0);
  };
  for (int i = 0; i < 30; ++i) allocate((1 + random(16)) * kMiB + 512 * random(4));  // weights
  constexpr int kActivations = 60;
  constexpr int kGradients = 20;
  std::vector<uint64_t> activation_sizes(kActivations), gradient_sizes(kGradients);
  std::vector<int> temporary(kActivations);  // freed at once (1), or kept for the backward pass (0)
  for (int i = 0; i < kActivations; ++i) {
    activation_sizes[i] = (1 + random(40)) * (kMiB / 2) + 512 * random(3);
    temporary[i] = random(3) == 0;
  }
  for (int i = 0; i < kGradients; ++i) gradient_sizes[i] = (1 + random(16)) * kMiB + 512 * random(4);
  std::vector<uint64_t> gradients(kGradients, 0);
  std::vector<uint64_t> two_step_blocks;
  int skip_from = kActivations;  // the first temporary activation of the second half
  for (int i = kActivations / 2; i < kActivations && skip_from == kActivations; ++i)
    if (temporary[i]) skip_from = i;
  for (int step = 0; step < steps; ++step) {
    const bool extra = deviate_every > 0 && step >= 10 && step % deviate_every == 0;
    const bool skip = deviate_every > 0 && step >= 10 && step % deviate_every == deviate_every / 2;
    std::vector<uint64_t> kept;
    for (int i = 0; i < kActivations; ++i) {
      if (extra && i == kActivations / 2) release(allocate(step / deviate_every % 2 ? 512 : 24 * kMiB));
      if (skip && i == skip_from) continue;
      const uint64_t address = allocate(activation_sizes[i]);
      if (temporary[i]) {
        release(address);
      } else {
        kept.push_back(address);
      }
    }
    // Backward: each gradient replaces last step's, and the kept activations go in reverse.
    for (int i = 0; i < kGradients; ++i) {
      if (gradients[i] != 0) release(gradients[i]);
      gradients[i] = allocate(gradient_sizes[i]);
      if (!kept.empty()) {
        release(kept.back());
        kept.pop_back();
      }
    }
    while (!kept.empty()) {
      release(kept.back());
      kept.pop_back();
    }
    two_step_blocks.push_back(allocate(512));
    if (two_step_blocks.size() == 3) {
      release(two_step_blocks.front());
      two_step_blocks.erase(two_step_blocks.begin());
    }
    result.calls_by_step.push_back(device.counters().map_calls + device.counters().unmap_calls);
  }
  result.reserved_peak = device.counters().reserved_peak;
  return result;
}

// Generated loops whose online placement keeps moving pages every few steps. Every block of every
// loop is checked against the blocks live beside it. Measured with the plans (rule 5): 25 of these
// 30 loops make no device call from their eighth step on, the other 5 at most 5 calls in their
// last 8 steps (15 in all), 67 calls after their second steps, and the highest reserved peak is
// 1.0205 x the requested peak (seed 2, reached online in its third step); the test holds the
// settled loops, at most 7 calls after the eighth step and 1.027 x. With the plan after two
// repetitions and no preference for mapped pages: 20 calls after the eighth steps, 123 after the
// second, 1.0264 x (seed 5, reached online in its fifth step, before a plan fitted the line).
// With only the plan packed above the live blocks (no plan packed around the old ones), one loop's
// first period took it to 1.0487 x. The same loops with rule 5 switched off in the source: 18
// loops call after their eighth step (198 calls), the highest reserved peak 1.0287 x.
TEST(MemreplayPolicyStepPlan, GeneratedTrainingLoopsSettleWithNoOverlap) {
  int settled = 0;
  uint64_t total_after_8 = 0, total_after_2 = 0;
  double worst = 0;
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    const LoopResult result = run_training_loop(seed, 16);
    ASSERT_EQ(result.calls_by_step.size(), 16u);
    const uint64_t after_step_8 = result.calls_by_step.back() - result.calls_by_step[7];
    settled += after_step_8 == 0;
    total_after_8 += after_step_8;
    total_after_2 += result.calls_by_step.back() - result.calls_by_step[1];
    worst = std::max(worst, static_cast<double>(result.reserved_peak) / static_cast<double>(result.requested_peak));
    EXPECT_LE(after_step_8, 7u) << "seed " << seed;
    EXPECT_LE(result.reserved_peak, result.requested_peak * 1027 / 1000) << "seed " << seed;
  }
  std::printf("generated loops: %d settled, %llu calls after step 8, %llu after step 2, worst reserved %.4f x\n",
              settled, static_cast<unsigned long long>(total_after_8), static_cast<unsigned long long>(total_after_2),
              worst);
  EXPECT_GE(settled, 25) << "loops with no device call after their eighth step";
}

// The same loops, 24 steps, with a request more in every fourth step from the tenth on and one
// fewer two steps later (6 such requests a loop): a run that repeats itself but for a request now
// and then. The plan waits a request for an extra one and steps ahead past a skipped one, so each
// costs at most what placing that one request costs: no more than one device call each beyond
// what the loops that repeat exactly make. Measured: 71 calls after the eighth steps against 42
// (the extra 24 MiB requests map pages); when any request of another size dropped the plan, 550.
TEST(MemreplayPolicyStepPlan, ARequestMoreOrFewerNowAndThenKeepsThePlan) {
  uint64_t exact_after_8 = 0, deviating_after_8 = 0;
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    const LoopResult exact = run_training_loop(seed, 24);
    const LoopResult deviating = run_training_loop(seed, 24, 4);
    exact_after_8 += exact.calls_by_step.back() - exact.calls_by_step[7];
    deviating_after_8 += deviating.calls_by_step.back() - deviating.calls_by_step[7];
    EXPECT_LE(deviating.reserved_peak, deviating.requested_peak * 1027 / 1000) << "seed " << seed;
  }
  std::printf(
      "generated loops, 24 steps: %llu calls after step 8 repeating exactly, %llu with a request more or "
      "fewer every 4 steps\n",
      static_cast<unsigned long long>(exact_after_8), static_cast<unsigned long long>(deviating_after_8));
  EXPECT_LE(deviating_after_8, exact_after_8 + 30 * 6) << "at most one call more per request off the plan";
}

}  // namespace
}  // namespace memreplay
