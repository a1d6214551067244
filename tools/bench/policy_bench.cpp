// Every registered policy replaying gpt2_generate.default (302,078 alloc + free_completed events,
// in memory; engine + policy + SimDevice timed; items/s = replayed events per second), side by
// side with the `pytorch` baseline in the same run; and `bound` (the offline floor) on the same
// trace. Target: >= 10 M events/s for every policy, bound under 2 s.
//
//   ./policy_bench                              # every policy
//   ./policy_bench --benchmark_filter='memreplay|pytorch$'
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "policies/registry.h"
#include "proto/trace_reader.h"
#include "recorder/import/import.h"
#include "recorder/import/trace_writer.h"
#include "replayer/bound/offline_bound.h"
#include "replayer/replay_session.h"
#include "replayer/sim_device.h"

namespace memreplay {
namespace {

const std::string& gpt2_generate_trace() {
  static const std::string trace = [] {
    const std::string path =
        (std::filesystem::temp_directory_path() / ("memreplay-policy-bench-" + std::to_string(getpid()) + ".mrt")).string();
    TraceWriter writer(path);
    import_file(std::string(MEMREPLAY_SHARED_DIR) + "/traces/gpt2_generate.default.pickle.xz", writer);
    return path;
  }();
  return trace;
}

const std::vector<Event>& gpt2_generate_events() {
  static const std::vector<Event> events = TraceReader::read_all(gpt2_generate_trace());
  return events;
}

void BM_Policy(benchmark::State& state, const std::string& spec) {
  const auto& events = gpt2_generate_events();
  uint64_t replayed = 0;
  for (auto _ : state) {
    state.PauseTiming();
    SimDevice device({});
    auto policy = PolicyRegistry::instance().create(spec, device);
    ReplaySession session(*policy, device, ReplayOptions{});
    state.ResumeTiming();
    session.feed_batch(events, 0);
    state.PauseTiming();
    const ReplayMetrics m = session.finish();
    replayed = m.events;
    benchmark::DoNotOptimize(m.reserved_peak);
    state.ResumeTiming();
  }
  state.SetItemsProcessed(static_cast<int64_t>(replayed * state.iterations()));
}

void BM_Bound(benchmark::State& state) {
  const auto blocks = read_lifetimes(gpt2_generate_trace());
  for (auto _ : state) benchmark::DoNotOptimize(compute_bound(blocks).greedy_rounded);
  state.SetItemsProcessed(static_cast<int64_t>(blocks.size() * state.iterations()));
}

[[maybe_unused]] const bool registered = [] {
  for (const PolicyInfo& info : PolicyRegistry::instance().policies())
    benchmark::RegisterBenchmark(("BM_Policy/" + info.name).c_str(), BM_Policy, info.name)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("BM_Policy/bfc:allow_growth:true", BM_Policy, std::string("bfc:allow_growth:true"))
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("BM_Bound/gpt2_generate", BM_Bound)->Unit(benchmark::kMillisecond)->Iterations(3);
  return true;
}();

}  // namespace
}  // namespace memreplay

BENCHMARK_MAIN();
