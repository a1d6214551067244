// Replay speed and memory, the targets of the replay engine:
//   BM_ReplayGpt2Generate/<policy>   gpt2_generate.default (302,078 alloc + free_completed events),
//                                    events in memory, engine + policy + SimDevice timed; items/s is
//                                    replayed alloc/free events per second.
//   BM_RunReplayGpt2Generate/<policy> the same trace as `memreplay replay` and memreplay.replay()
//                                    replay it: run_replay on the .mrt file, reading and decoding
//                                    it included (tools/bench/python_bench.py compares the two).
//   BM_ReplaySynthetic100M           a synthetic 100M-event trace streamed from a .mrt file through
//                                    the `pytorch` policy; max_rss_mb is the process's peak RSS.
//
//   ./replay_bench --benchmark_filter=Gpt2
//   MEMREPLAY_BENCH_EVENTS=100000000 ./replay_bench --benchmark_filter=Synthetic
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "policies/registry.h"
#include "proto/trace_reader.h"
#include "proto/trace_writer.h"
#include "recorder/import/import.h"
#include "replayer/replay_runner.h"
#include "replayer/replay_session.h"
#include "replayer/sim/sim_device.h"
#include "tools/bench/bench_support.h"

namespace memreplay {
namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("memreplay-bench-" + std::to_string(getpid()) + "-" + name))
      .string();
}

void BM_ReplayGpt2Generate(benchmark::State& state, std::string policy_spec) {
  const uint64_t replayed = bench::replay_each_iteration(
      state, bench::gpt2_generate_events(), [] { return std::make_unique<SimDevice>(SimDevice::Options{}); },
      [&](Device& device) { return PolicyRegistry::instance().create(policy_spec, device); });
  state.counters["events"] = static_cast<double>(replayed);
}
BENCHMARK_CAPTURE(BM_ReplayGpt2Generate, pytorch, std::string("pytorch"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ReplayGpt2Generate, pytorch_expandable, std::string("pytorch:expandable_segments:True"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ReplayGpt2Generate, passthrough, std::string("passthrough"))->Unit(benchmark::kMillisecond);

void BM_RunReplayGpt2Generate(benchmark::State& state, std::string policy_spec) {
  ReplayOptions options;
  options.trace_path = bench::gpt2_generate_trace();
  options.policy_spec = policy_spec;
  uint64_t events = 0;
  for (auto _ : state) {
    const ReplayMetrics m = run_replay(options);
    events = m.events;
    benchmark::DoNotOptimize(m.reserved_peak);
  }
  state.SetItemsProcessed(static_cast<int64_t>(events * state.iterations()));
}
BENCHMARK_CAPTURE(BM_RunReplayGpt2Generate, pytorch, std::string("pytorch"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_RunReplayGpt2Generate, pytorch_expandable, std::string("pytorch:expandable_segments:True"))
    ->Unit(benchmark::kMillisecond);

// A long steady-state training-like loop: per step, 64 activations allocated then freed in reverse,
// sizes from a fixed menu, one stream. Written in chunks so the generator stays small too.
std::string write_synthetic_trace(uint64_t events) {
  const std::string path = temp_path("synthetic.mrt");
  TraceWriter writer(path);
  proto::TraceHeader header;
  header.set_source("synthetic");
  writer.begin(header);
  std::mt19937_64 rng(7);
  const uint64_t sizes[] = {512, 4096, 1 << 20, 3 << 20, 12 << 20, 50 << 20, 80000, 262144};
  uint64_t time = 1'700'000'000'000'000'000ull;
  uint64_t written = 0;
  std::vector<std::pair<uint64_t, uint64_t>> live;
  while (written < events) {
    for (int i = 0; i < 64 && written < events; ++i, ++written) {
      Event e{.kind = EventKind::alloc,
              .time_ns = time += 1000,
              .address = 0x7f0000000000ull + uint64_t(i) * (64ull << 20),
              .size = sizes[rng() % 8]};
      writer.append(e);
      live.emplace_back(e.address, e.size);
    }
    while (!live.empty() && written < events) {
      Event e{.kind = EventKind::free_completed,
              .time_ns = time += 1000,
              .address = live.back().first,
              .size = live.back().second};
      writer.append(e);
      live.pop_back();
      ++written;
    }
    live.clear();
  }
  writer.finish();
  return path;
}

void BM_ReplaySynthetic(benchmark::State& state) {
  const char* env = std::getenv("MEMREPLAY_BENCH_EVENTS");
  const uint64_t events = env != nullptr ? std::strtoull(env, nullptr, 10) : 10'000'000;
  const std::string path = write_synthetic_trace(events);
  ReplayMetrics m;
  for (auto _ : state) {
    ReplayOptions request;
    request.trace_path = path;
    request.policy_spec = "pytorch";
    m = run_replay(request);
  }
  std::filesystem::remove(path);
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  state.SetItemsProcessed(static_cast<int64_t>(m.events * state.iterations()));
  state.counters["events"] = static_cast<double>(m.events);
  state.counters["max_rss_mb"] = static_cast<double>(usage.ru_maxrss) / 1024.0;
  state.counters["engine_seconds"] = m.replay_seconds;
}
BENCHMARK(BM_ReplaySynthetic)->Iterations(1)->Unit(benchmark::kSecond);

}  // namespace
}  // namespace memreplay

BENCHMARK_MAIN();
