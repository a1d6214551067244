// Every registered policy replaying gpt2_generate.default (302,078 alloc + free_completed events,
// in memory; engine + policy + SimDevice timed; items/s = replayed events per second), side by
// side with the `pytorch` baseline in the same run; and `bound` (the offline floor) on the same
// trace. Target: >= 10 M events/s for every policy, bound under 2 s.
//
//   ./policy_bench                              # every policy
//   ./policy_bench --benchmark_filter='memreplay|pytorch$'
#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "policies/registry.h"
#include "replayer/bound/offline_bound.h"
#include "replayer/sim/sim_device.h"
#include "tools/bench/bench_support.h"

namespace memreplay {
namespace {

void BM_Policy(benchmark::State& state, const std::string& spec) {
  bench::replay_each_iteration(
      state, bench::gpt2_generate_events(), [] { return std::make_unique<SimDevice>(SimDevice::Options{}); },
      [&](Device& device) { return PolicyRegistry::instance().create(spec, device); });
}

void BM_Bound(benchmark::State& state) {
  const auto blocks = read_lifetimes(bench::gpt2_generate_trace());
  for (auto _ : state) benchmark::DoNotOptimize(compute_bound(blocks).greedy_rounded);
  state.SetItemsProcessed(static_cast<int64_t>(blocks.size() * state.iterations()));
}

[[maybe_unused]] const bool registered = [] {
  for (const PolicyInfo& info : PolicyRegistry::instance().policies())
    benchmark::RegisterBenchmark(("BM_Policy/" + info.name).c_str(), BM_Policy, info.name)
        ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("BM_Policy/bfc:allow_growth:true", BM_Policy, std::string("bfc:allow_growth:true"))
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("BM_Bound/gpt2_generate", BM_Bound)->Unit(benchmark::kMillisecond)->Iterations(3);
  return true;
}();

}  // namespace
}  // namespace memreplay

BENCHMARK_MAIN();
