// Replay speed on a real GPU, and the latency of single allocations.
//
//   MEMREPLAY_BENCH_TRACE=gpt2_generate.mrt gpu_replay_bench [--benchmark_...]
//
// BM_Replay/<device>/<policy>: the whole trace through a fresh policy and device per iteration;
//   only feeding the events is timed (device creation, context and trace reading are not).
//   items/s = replayed alloc + free_completed events per second (the unit of PyTorch's own
//   3.3 M events/s, 91 ms, for gpt2_generate from C++).
// BM_AllocateLatency/<device>/<policy>: the engine's per-operation timing (--time-operations):
//   every allocate/free timed on its own and sorted by whether a device counter moved; counters
//   alloc_cache_p50_ns (served from the policy's cache), alloc_device_p50_ns, free_p50_ns (to the
//   cache), and the timer's own cost (timer_ns, included in each sample).
// On a machine without a GPU the cuda cases are skipped (SkipWithError); an unreadable trace
// ends the program with status 1.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "policies/registry.h"
#include "proto/trace_reader.h"
#include "replayer/device_registry.h"
#include "replayer/latency_histogram.h"
#include "replayer/replay_session.h"

namespace memreplay {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<Event>& trace_events() {
  static std::vector<Event> events;
  return events;
}

struct TimedReplay {
  ReplayMetrics metrics;
  uint64_t device_call_ns;
};

// One replay of the trace on a fresh device and policy, its feeding timed as the iteration's time;
// nullopt, with the benchmark skipped, when the device cannot start (no GPU).
std::optional<TimedReplay> replay_once(benchmark::State& state, const std::string& device_spec,
                                       const std::string& policy_spec, bool time_operations) {
  std::unique_ptr<Device> device;
  try {
    device = DeviceRegistry::instance().create(device_spec, DeviceRequest{});
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return std::nullopt;
  }
  auto policy = PolicyRegistry::instance().create(policy_spec, *device);
  // With time_operations, the engine's own per-operation timing: one definition of "served from
  // cache" (no device counter moved) for the CLI, the tests and this benchmark.
  ReplaySession session(*policy, *device,
                        ReplayOptions{.trace_path = "MEMREPLAY_BENCH_TRACE", .time_operations = time_operations});
  const auto start = Clock::now();
  session.feed_batch(trace_events(), 0);
  state.SetIterationTime(std::chrono::duration<double>(Clock::now() - start).count());
  return TimedReplay{session.finish(), device->counters().device_call_ns};
}

void BM_Replay(benchmark::State& state, std::string device_spec, std::string policy_spec) {
  uint64_t events = 0;
  uint64_t device_ns = 0;
  for (auto _ : state) {
    const auto replay = replay_once(state, device_spec, policy_spec, false);
    if (!replay) return;
    events += replay->metrics.events;
    device_ns += replay->device_call_ns;
  }
  state.SetItemsProcessed(static_cast<int64_t>(events));
  state.counters["device_call_ms"] =
      benchmark::Counter(double(device_ns) / 1e6 / double(state.iterations()), benchmark::Counter::kDefaults);
}

// The timer's own cost: the p50 of an empty timed region (each latency sample includes it).
uint64_t timer_cost_ns() {
  LatencyHistogram h;
  for (int i = 0; i < 100000; ++i) {
    const auto start = Clock::now();
    h.record(static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count()));
  }
  return h.percentile(50);
}

void BM_AllocateLatency(benchmark::State& state, std::string device_spec, std::string policy_spec) {
  std::optional<OperationLatencies> latency;
  for (auto _ : state) {
    const auto replay = replay_once(state, device_spec, policy_spec, true);
    if (!replay) return;
    latency = replay->metrics.latency;  // the last iteration's: the warmest
  }
  if (!latency) return;
  const auto counter = [](auto v) { return benchmark::Counter(double(v), benchmark::Counter::kDefaults); };
  state.counters["alloc_cache_p50_ns"] = counter(latency->allocate_cached.p50_ns);
  state.counters["alloc_cache_p99_ns"] = counter(latency->allocate_cached.p99_ns);
  state.counters["alloc_cache_n"] = counter(latency->allocate_cached.count);
  state.counters["alloc_device_p50_ns"] = counter(latency->allocate_device_call.p50_ns);
  state.counters["alloc_device_max_ns"] = counter(latency->allocate_device_call.max_ns);
  state.counters["alloc_device_n"] = counter(latency->allocate_device_call.count);
  state.counters["free_p50_ns"] = counter(latency->free_cached.p50_ns);
  state.counters["timer_ns"] = counter(timer_cost_ns());
}

void register_all() {
  for (const std::string device : {"cuda:0", "sim"}) {
    for (const std::string policy : {"pytorch", "pytorch:expandable_segments:True", "cuda_async"}) {
      benchmark::RegisterBenchmark(("BM_Replay/" + device + "/" + policy).c_str(), BM_Replay, device, policy)
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond)
          ->MinWarmUpTime(0.2)
          ->MinTime(1.0);
      benchmark::RegisterBenchmark(("BM_AllocateLatency/" + device + "/" + policy).c_str(), BM_AllocateLatency, device,
                                   policy)
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
