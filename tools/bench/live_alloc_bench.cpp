// The CPU cost of the live allocator per request, what a job under memreplay.torch.use_policy()
// pays on its allocating thread: the trace a live ResNet-18 training job recorded under the
// `memreplay` policy (tests/data/live_policy/resnet18.memreplay.mrt: 13,387 allocations and as many
// frees in 55 steps) fed through
//   Replay                the replay engine and the policy alone
//   LiveAllocator         the live allocator (its lock, the stream fences, the live-block map and
//                         the policy), the whole trace: growth and the plan's first steps included
//   LiveAllocatorSteady   the same, only the requests of the trace's second half timed (steps 28
//                         to 55, where a live job's step time is measured)
// each for `memreplay` and, as the baseline, `pytorch` (PyTorch's caching-allocator rules), on the
// simulator: no device call is timed (a live job makes them only while it grows). items/s =
// requests (allocations + frees) per second; ns per request = 1e9 / items_per_second. Writing the
// run's own trace is left out: the recorder's writer thread cannot keep up with requests this fast
// and drops events, which a job at its own pace does not.
//
//   ./live_alloc_bench
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "policies/registry.h"
#include "proto/trace_reader.h"
#include "replayer/live/live_allocator.h"
#include "replayer/live/stream_order.h"
#include "replayer/sim/sim_device.h"
#include "tools/bench/bench_support.h"

namespace memreplay {
namespace {

const std::vector<Event>& resnet18_events() {
  static const std::vector<Event> events =
      TraceReader::read_all(std::string(MEMREPLAY_SOURCE_DIR) + "/tests/data/live_policy/resnet18.memreplay.mrt");
  return events;
}

uint64_t requests(const std::vector<Event>& events, size_t from) {
  uint64_t count = 0;
  for (size_t i = from; i < events.size(); ++i)
    count += events[i].kind == EventKind::alloc || events[i].kind == EventKind::free_requested;
  return count;
}

void BM_Replay(benchmark::State& state, const std::string& spec) {
  bench::replay_each_iteration(
      state, resnet18_events(), [] { return std::make_unique<SimDevice>(SimDevice::Options{}); },
      [&](Device& device) { return PolicyRegistry::instance().create(spec, device); });
  state.SetItemsProcessed(static_cast<int64_t>(requests(resnet18_events(), 0) * state.iterations()));
}

// The job's requests through a fresh LiveAllocator per iteration; `steady`: only the requests from
// the middle of the trace on are timed.
void BM_Live(benchmark::State& state, const std::string& spec, bool steady) {
  const std::vector<Event>& events = resnet18_events();
  const size_t timed_from = steady ? events.size() / 2 : 0;
  std::unordered_map<uint64_t, uint64_t> handed_out;  // the trace's address -> this run's
  for (auto _ : state) {
    state.PauseTiming();
    LiveAllocator allocator(std::make_unique<SimDevice>(SimDevice::Options{}), spec, std::make_unique<HostOrder>(),
                            nullptr);
    handed_out.clear();
    for (size_t i = 0; i < events.size(); ++i) {
      if (i == timed_from) state.ResumeTiming();
      const Event& event = events[i];
      if (event.kind == EventKind::alloc) {
        const auto address = allocator.allocate(event.size, event.stream, event.pool);
        if (!address) {
          state.SkipWithError("out of memory");
          return;
        }
        handed_out[event.address] = *address;
      } else if (event.kind == EventKind::free_requested) {
        allocator.free(handed_out.at(event.address));
      }
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(requests(events, timed_from) * state.iterations()));
}

[[maybe_unused]] const bool registered = [] {
  for (const std::string spec : {"memreplay", "pytorch"}) {
    benchmark::RegisterBenchmark(("BM_Replay/" + spec).c_str(), BM_Replay, spec)->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("BM_LiveAllocator/" + spec).c_str(), BM_Live, spec, false)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("BM_LiveAllocatorSteady/" + spec).c_str(), BM_Live, spec, true)
        ->Unit(benchmark::kMillisecond);
  }
  return true;
}();

}  // namespace
}  // namespace memreplay

BENCHMARK_MAIN();
