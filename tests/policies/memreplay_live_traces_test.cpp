// The `memreplay` policy against its targets on the traces that live jobs recorded with it as
// their allocator (tests/data/live_policy: GPT-2-like and ResNet-18 training, ViT inference at
// varying batches, 55 steps each, on an H100):
//   reserved peak  <= 1.02 x requested peak
//   device calls   <= max(PyTorch default's, ceil(1.25 x the floor with one page of slack)),
//                     as on the shared traces (memreplay_policy_test.cpp)
//   a training trace makes no device call after its second step
// and, where that is missed, the step after which it makes none (the memreplay policy's plan for
// a repeating run, rule 5, takes over within a few steps and then repeats itself).
// These traces carry no optimizer-step markers: a step is the period of the sequence of requested
// sizes (the shortest that the last three periods repeat exactly), and the periodic part begins
// at the earliest allocation from which every size equals the one a period later; "after the
// second step" is after two periods of it. A training trace is one with at least 10 such steps
// (gpt, resnet18; vit_infer repeats its cycle of batch sizes 5 times).
// Where a target is missed (docs/memreplay-policy.md, "The live-policy traces"), kKnownGaps holds
// the measured figure as a ceiling (a regression fails) and the test asserts that the target is
// still missed (so that the list stays true).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "policies/registry.h"
#include "proto/trace_reader.h"
#include "replayer/replay_runner.h"
#include "replayer/replay_session.h"
#include "replayer/sim/sim_device.h"
#include "tests/support/growth_bound.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

std::filesystem::path live_policy_dir() { return testing::source_dir() / "tests/data/live_policy"; }

std::vector<std::string> live_traces() {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(live_policy_dir()))
    if (entry.path().extension() == ".mrt") names.push_back(entry.path().stem().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

// Measured where a target is missed: the reserved ratio in parts per 10,000, the device calls
// (maps + unmaps), the calls after the second step. 0: not a gap.
struct Gaps {
  uint64_t reserved_per_10k = 0;
  uint64_t calls = 0;
  uint64_t calls_after_step_2 = 0;
  size_t last_step_with_calls = 0;  // 1-based; 0: not a gap
};
const std::map<std::string, Gaps> kKnownGaps = {
    // 79 maps + 61 unmaps: the online placement moves cached pages in every step (to place its
    // 64 MiB blocks at the peak) until the plan takes over in the third step and moves every block
    // once; from the fourth step on none makes a call. Reserved 1.0191 x: met.
    {"gpt", {0, 140, 35, 3}},
    // 41 maps + 27 unmaps, none from the fifth step on; the reserved peak is the online peak of
    // step 2, 1.0338 x.
    {"resnet18", {10339, 68, 30, 4}},
    // 74 maps + 17 unmaps, against a bound of 62 (PyTorch makes 34).
    {"vit_infer", {0, 91, 0, 0}},
};

// Device calls after every allocation of a replay, and the allocations' requested sizes.
struct AllocCalls {
  std::vector<uint64_t> sizes;
  std::vector<uint64_t> calls_after;
};

AllocCalls replay_counting_allocs(const ReplayOptions& options) {
  TraceReader reader(options.trace_path);
  auto [device, policy] = make_replay_target(reader, options);
  ReplaySession session(*policy, *device, options);
  AllocCalls out;
  std::vector<Event> batch;
  uint64_t index = 0;
  while (reader.next_batch(batch)) {
    for (const Event& event : batch) {
      session.feed(event, index++);
      if (event.device != options.trace_device || event.kind != EventKind::alloc) continue;
      const DeviceCounters& c = device->counters();
      out.sizes.push_back(event.size);
      out.calls_after.push_back(c.malloc_calls + c.map_calls + c.free_calls + c.unmap_calls);
    }
  }
  return out;
}

struct Period {
  size_t length = 0;  // allocations per step (0: not periodic)
  size_t start = 0;  // the first allocation of the periodic part
};

Period find_period(const std::vector<uint64_t>& sizes) {
  const size_t n = sizes.size();
  for (size_t length = 2; 4 * length <= n; ++length) {
    bool repeats = true;
    for (size_t i = n - 3 * length; i < n && repeats; ++i) repeats = sizes[i] == sizes[i - length];
    if (!repeats) continue;
    size_t start = n - length;
    while (start > 0 && sizes[start - 1] == sizes[start - 1 + length]) --start;
    return Period{length, start};
  }
  return {};
}

TEST(MemreplayLiveTraces, EveryLivePolicyTraceIsCovered) {
  EXPECT_EQ(live_traces(), (std::vector<std::string>{"gpt", "resnet18", "vit_infer"}));
}

class MemreplayLiveTargets : public ::testing::TestWithParam<std::string> {};

TEST_P(MemreplayLiveTargets, ReservedCallsAndSteadyState) {
  ReplayOptions options;
  options.trace_path = (live_policy_dir() / (GetParam() + ".memreplay.mrt")).string();
  options.policy_spec = "pytorch";
  const ReplayMetrics pytorch = run_replay(options);
  options.policy_spec = "memreplay";
  const ReplayMetrics ours = run_replay(options);
  ASSERT_FALSE(ours.oom_at_event);
  const Gaps gaps = kKnownGaps.count(GetParam()) ? kKnownGaps.at(GetParam()) : Gaps{};

  const double reserved_ratio = static_cast<double>(ours.reserved_peak) / static_cast<double>(ours.requested_peak);
  if (gaps.reserved_per_10k == 0) {
    EXPECT_LE(reserved_ratio, 1.02) << "reserved peak target";
  } else {
    EXPECT_LE(reserved_ratio, gaps.reserved_per_10k / 10000.0) << "reserved peak ceiling";
    EXPECT_GT(reserved_ratio, 1.02) << "the reserved target is met now: take it off kKnownGaps";
  }

  const uint64_t our_calls = ours.device_alloc_calls + ours.device_free_calls;
  const uint64_t their_calls = pytorch.device_alloc_calls + pytorch.device_free_calls;
  const std::vector<uint64_t> live = testing::live_curve(read_lifetimes(options.trace_path));
  const uint64_t page_slack_floor = testing::min_growth_calls(live, 2u << 20);
  const uint64_t bound = std::max(their_calls, (5 * page_slack_floor + 3) / 4);
  if (gaps.calls == 0) {
    EXPECT_LE(our_calls, bound) << "device calls";
  } else {
    EXPECT_LE(our_calls, gaps.calls) << "device calls ceiling";
    EXPECT_GT(our_calls, bound) << "the calls target is met now: take it off kKnownGaps";
  }

  const AllocCalls allocs = replay_counting_allocs(options);
  ASSERT_EQ(allocs.calls_after.back(), our_calls) << "the counting replay is the same replay";
  const Period period = find_period(allocs.sizes);
  ASSERT_GT(period.length, 0u);
  const size_t steps = (allocs.sizes.size() - period.start) / period.length;
  const bool training = steps >= 10;
  EXPECT_EQ(training, GetParam() != "vit_infer") << "training traces: gpt and resnet18";
  const uint64_t after_step_2 = training ? our_calls - allocs.calls_after[period.start + 2 * period.length - 1] : 0;
  if (gaps.calls_after_step_2 == 0) {
    EXPECT_EQ(after_step_2, 0u) << "device calls after the second step";
  } else {
    EXPECT_LE(after_step_2, gaps.calls_after_step_2) << "device calls after the second step: ceiling";
    EXPECT_GT(after_step_2, 0u) << "no call after step 2 now: take it off kKnownGaps";
  }
  size_t last_step_with_calls = 0;  // 1-based, of the periodic part
  for (size_t step = 1; step <= steps; ++step) {
    const size_t end = period.start + step * period.length - 1;
    const uint64_t before = end >= period.length ? allocs.calls_after[end - period.length] : 0;
    if (allocs.calls_after[end] > before) last_step_with_calls = step;
  }
  if (training && gaps.last_step_with_calls != 0) {
    EXPECT_LE(last_step_with_calls, gaps.last_step_with_calls) << "the step after which no call comes";
    EXPECT_LT(last_step_with_calls + 10, steps) << "and many steps after it";
  }

  std::printf(
      "%-10s %zu allocations, period %zu from %zu (%zu steps) | reserved %.4f x | memreplay %llu (%llu + %llu) | "
      "pytorch %llu | floor (one page) %llu | bound %llu | after step 2: %s, last step with a call: %zu\n",
      GetParam().c_str(), allocs.sizes.size(), period.length, period.start, steps, reserved_ratio,
      static_cast<unsigned long long>(our_calls), static_cast<unsigned long long>(ours.device_alloc_calls),
      static_cast<unsigned long long>(ours.device_free_calls), static_cast<unsigned long long>(their_calls),
      static_cast<unsigned long long>(page_slack_floor), static_cast<unsigned long long>(bound),
      training ? std::to_string(after_step_2).c_str() : "(not training)", last_step_with_calls);
}

INSTANTIATE_TEST_SUITE_P(LivePolicyTraces, MemreplayLiveTargets, ::testing::ValuesIn(live_traces()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// The device calls of the memreplay policy on events held in memory, replayed on the simulator.
uint64_t memreplay_calls(const std::vector<Event>& trace) {
  SimDevice device(SimDevice::Options{});
  const auto policy = PolicyRegistry::instance().create("memreplay", device);
  ReplaySession session(*policy, device, ReplayOptions{});
  session.feed_batch(trace, 0);
  const ReplayMetrics metrics = session.finish();
  EXPECT_FALSE(metrics.oom_at_event);
  return metrics.device_alloc_calls + metrics.device_free_calls;
}

// gpt's trace with one request more every 10 steps of its periodic part from its tenth on (4
// bytes, freed at once, 100 allocations into the step: a metric logged now and then) makes the device calls the trace
// itself makes: the plan waits a request for such a one (docs/memreplay-policy.md, rule 5). When
// any request of another size dropped the plan, 865 calls against 140.
TEST(MemreplayLiveTraces, ARequestMoreEveryTenStepsCostsNoCall) {
  const std::string path = (live_policy_dir() / "gpt.memreplay.mrt").string();
  const std::vector<Event> events = TraceReader::read_all(path);
  std::vector<uint64_t> sizes;
  for (const Event& event : events)
    if (event.kind == EventKind::alloc) sizes.push_back(event.size);
  const Period period = find_period(sizes);
  ASSERT_GT(period.length, 0u);
  std::vector<Event> deviating;
  uint64_t allocations = 0, extras = 0;
  for (const Event& event : events) {
    deviating.push_back(event);
    if (event.kind != EventKind::alloc) continue;
    const uint64_t index = allocations++;
    if (index < period.start + 10 * period.length || (index - period.start) % (10 * period.length) != 100) continue;
    Event extra = event;
    extra.address = (uint64_t{1} << 60) + extras++ * 4096;  // no block of the trace is there
    extra.size = 4;
    deviating.push_back(extra);
    for (const EventKind kind : {EventKind::free_requested, EventKind::free_completed}) {
      extra.kind = kind;
      deviating.push_back(extra);
    }
  }
  ASSERT_GE(extras, 5u);
  EXPECT_EQ(memreplay_calls(deviating), memreplay_calls(events));
}

// gpt's trace with the step's loss (the one block of its period that outlives the period) held
// five periods longer every 10 steps from the tenth, as a program that keeps a reference for a
// while does (live_overhead_job.py's last timed loss, held through its five profiled steps): the
// plan's place for that block's next instance is still taken, and that one request is placed
// by rules 1-3 while the plan goes on. When a taken place dropped the plan, the profiled steps
// of a live gpt run made 46 calls; here the trace's own calls are made, and no more.
TEST(MemreplayLiveTraces, ABlockHeldLongerThanItsPeriodCostsNoCall) {
  const std::string path = (live_policy_dir() / "gpt.memreplay.mrt").string();
  const std::vector<Event> events = TraceReader::read_all(path);
  std::vector<uint64_t> sizes;
  std::unordered_map<uint64_t, uint64_t> allocation_at;  // live address -> its allocation's index
  std::vector<uint64_t> lifetime;  // per allocation, in allocations made until its free
  for (const Event& event : events) {
    if (event.kind == EventKind::alloc) {
      allocation_at[event.address] = sizes.size();
      sizes.push_back(event.size);
      lifetime.push_back(UINT64_MAX);
    } else if (event.kind == EventKind::free_completed) {
      const uint64_t index = allocation_at.at(event.address);
      lifetime[index] = sizes.size() - index;
    }
  }
  const Period period = find_period(sizes);
  ASSERT_GT(period.length, 0u);
  const uint64_t step_10 = period.start + 10 * period.length;
  uint64_t place = 0;
  while (place < period.length && lifetime[step_10 + place] <= period.length) ++place;
  ASSERT_LT(place, period.length) << "no block of the period outlives it";
  // The held instances' frees, moved to just before the allocation five periods after their own.
  std::set<uint64_t> held;
  for (uint64_t index = step_10 + place; index + 6 * period.length < sizes.size(); index += 10 * period.length)
    held.insert(index);
  ASSERT_GE(held.size(), 3u);
  std::map<uint64_t, std::vector<Event>> freed_before;  // allocation index -> delayed frees
  std::unordered_map<uint64_t, uint64_t> live_index;  // address -> its allocation's index
  std::vector<Event> deviating;
  uint64_t allocations = 0;
  for (const Event& event : events) {
    if (event.kind == EventKind::alloc) {
      if (const auto due = freed_before.find(allocations); due != freed_before.end()) {
        deviating.insert(deviating.end(), due->second.begin(), due->second.end());
        freed_before.erase(due);
      }
      live_index[event.address] = allocations++;
      if (held.contains(allocations - 1)) {  // its own name: the trace's next block there is another
        Event renamed = event;
        renamed.address = (uint64_t{1} << 60) + (allocations - 1) * 4096;
        deviating.push_back(renamed);
        continue;
      }
    } else if (event.kind == EventKind::free_requested || event.kind == EventKind::free_completed) {
      const uint64_t index = live_index.at(event.address);
      if (held.contains(index)) {
        Event renamed = event;
        renamed.address = (uint64_t{1} << 60) + index * 4096;
        freed_before[index + 5 * period.length].push_back(renamed);
        continue;
      }
    }
    deviating.push_back(event);
  }
  ASSERT_TRUE(freed_before.empty());
  EXPECT_EQ(memreplay_calls(deviating), memreplay_calls(events));
}

}  // namespace
}  // namespace memreplay
