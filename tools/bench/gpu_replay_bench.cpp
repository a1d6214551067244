// Replay speed on a real GPU, and the latency of single allocations.
//
//   MEMREPLAY_BENCH_TRACE=gpt2_generate.mrt gpu_replay_bench [--benchmark_...]
//
// BM_Replay/<device>/<policy>: the whole trace through a fresh policy and device per iteration;
//   only feeding the events is timed (device creation, context and trace reading are not).
//   items/s = replayed alloc + free_completed events per second (the unit of PyTorch's own
//   3.3 M events/s, 91 ms, for gpt2_generate from C++).
// BM_AllocateLatency/<device>/<policy>: every allocate/free of the trace timed on its own and
//   sorted by whether the device was called: counters alloc_cache_p50_ns (served from the
//   policy's cache), alloc_device_p50_ns, free_p50_ns, and the timer's own cost (timer_ns,
//   included in each sample).
// On a machine without a GPU the cuda cases are skipped (SkipWithError); an unreadable trace
// ends the program with status 1.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "policies/registry.h"
#include "replayer/device_registry.h"
#include "replayer/engine.h"
#include "replayer/latency_histogram.h"
#include "replayer/trace_reader.h"

namespace memreplay {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<Event>& trace_events() {
  static std::vector<Event> events;
  return events;
}

// Creates the device, or says why it cannot (no GPU): nullptr and the reason.
std::unique_ptr<Device> make_device(const std::string& spec, std::string& why_not) {
  try {
    return DeviceRegistry::instance().create(spec, DeviceRequest{});
  } catch (const std::exception& e) {
    why_not = e.what();
    return nullptr;
  }
}

uint64_t device_calls(const DeviceCounters& c) { return c.malloc_calls + c.map_calls + c.pool_grow_calls; }

void BM_Replay(benchmark::State& state, std::string device_spec, std::string policy_spec) {
  uint64_t events = 0;
  uint64_t device_ns = 0;
  for (auto _ : state) {
    std::string why_not;
    auto device = make_device(device_spec, why_not);
    if (!device) {
      state.SkipWithError(why_not.c_str());
      return;
    }
    auto policy = PolicyRegistry::instance().create(policy_spec, *device);
    ReplaySession session(*policy, *device, ReplayOptions{.trace_name = "MEMREPLAY_BENCH_TRACE"});
    const auto start = Clock::now();
    session.feed_batch(trace_events(), 0);
    state.SetIterationTime(std::chrono::duration<double>(Clock::now() - start).count());
    const ReplayMetrics m = session.finish();
    events += m.events;
    device_ns += device->counters().device_call_ns;
  }
  state.SetItemsProcessed(static_cast<int64_t>(events));
  state.counters["device_call_ms"] =
      benchmark::Counter(double(device_ns) / 1e6 / double(state.iterations()), benchmark::Counter::kDefaults);
}

// The timer's own cost: the p50 of an empty timed region.
uint64_t timer_cost_ns() {
  LatencyHistogram h;
  for (int i = 0; i < 100000; ++i) {
    const auto start = Clock::now();
    h.record(static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count()));
  }
  return h.percentile(50);
}

void BM_AllocateLatency(benchmark::State& state, std::string device_spec, std::string policy_spec) {
  LatencyHistogram from_cache;
  LatencyHistogram from_device;
  LatencyHistogram frees;
  for (auto _ : state) {
    std::string why_not;
    auto device = make_device(device_spec, why_not);
    if (!device) {
      state.SkipWithError(why_not.c_str());
      return;
    }
    auto policy = PolicyRegistry::instance().create(policy_spec, *device);
    std::unordered_map<uint64_t, uint64_t> live;  // trace address -> policy address
    live.reserve(1 << 14);
    const auto start = Clock::now();
    for (const Event& e : trace_events()) {
      if (e.device != 0 || e.has_flag(kPreexisting)) continue;
      if (e.kind == EventKind::alloc && e.size != 0) {
        const uint64_t calls = device_calls(device->counters());
        const auto t0 = Clock::now();
        const auto block = policy->allocate(e.size, e.stream);
        const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
        (device_calls(device->counters()) == calls ? from_cache : from_device).record(static_cast<uint64_t>(ns));
        if (!block) break;  // OOM: the rest of the trace means nothing
        live[e.address] = block->address;
      } else if (e.kind == EventKind::free_completed) {
        const auto it = live.find(e.address);
        if (it == live.end()) continue;
        const auto t0 = Clock::now();
        policy->free(it->second);
        frees.record(static_cast<uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count()));
        live.erase(it);
      }
    }
    state.SetIterationTime(std::chrono::duration<double>(Clock::now() - start).count());
  }
  const auto counter = [](double v) { return benchmark::Counter(v, benchmark::Counter::kDefaults); };
  state.counters["alloc_cache_p50_ns"] = counter(double(from_cache.percentile(50)));
  state.counters["alloc_cache_p99_ns"] = counter(double(from_cache.percentile(99)));
  state.counters["alloc_cache_n"] = counter(double(from_cache.count()));
  state.counters["alloc_device_p50_ns"] = counter(double(from_device.percentile(50)));
  state.counters["alloc_device_max_ns"] = counter(double(from_device.max()));
  state.counters["alloc_device_n"] = counter(double(from_device.count()));
  state.counters["free_p50_ns"] = counter(double(frees.percentile(50)));
  state.counters["timer_ns"] = counter(double(timer_cost_ns()));
}

void register_all() {
  for (const std::string device : {"cuda:0", "sim"}) {
    for (const std::string policy : {"pytorch", "pytorch:expandable_segments:True", "cuda_async"}) {
      benchmark::RegisterBenchmark(("BM_Replay/" + device + "/" + policy).c_str(), BM_Replay, device, policy)
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond)
          ->MinWarmUpTime(0.2)
          ->MinTime(1.0);
      benchmark::RegisterBenchmark(("BM_AllocateLatency/" + device + "/" + policy).c_str(), BM_AllocateLatency,
                                   device, policy)
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond)
          ->Iterations(5);
    }
  }
}

}  // namespace
}  // namespace memreplay

int main(int argc, char** argv) {
  const char* path = std::getenv("MEMREPLAY_BENCH_TRACE");
  if (path == nullptr) {
    std::cerr << "gpu_replay_bench: set MEMREPLAY_BENCH_TRACE to a .mrt trace (e.g. gpt2_generate)\n";
    return 1;
  }
  try {
    memreplay::trace_events() = memreplay::TraceReader::read_all(path);
  } catch (const std::exception& e) {
    std::cerr << "gpu_replay_bench: " << e.what() << "\n";
    return 1;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  memreplay::register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
