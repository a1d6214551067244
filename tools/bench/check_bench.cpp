// What `memreplay check` costs over all the shared traces × 5 policies, side by side with the same
// replays run one by one (run_replay: each reads and decodes the trace again). The target:
// under 2 s for the whole set.
//   build/tools/check_bench
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "proto/trace_writer.h"
#include "recorder/import/import.h"
#include "replayer/replay_runner.h"
#include "results/check.h"
#include "results/replay_batch.h"

namespace memreplay {
namespace {

const std::vector<std::string> kPolicies = {"pytorch", "pytorch:expandable_segments:True",
                                            "pytorch:max_split_size_mb:64", "pytorch:roundup_power2_divisions:4",
                                            "cuda_async"};

// Every shared trace imported once into a temporary .mrt.
const std::vector<std::string>& shared_traces() {
  static const std::vector<std::string> traces = [] {
    std::vector<std::string> out;
    const auto dir = std::filesystem::path(MEMREPLAY_REAL_DATA_DIR) / "traces";
    const auto tmp = std::filesystem::temp_directory_path() / ("memreplay-check-bench-" + std::to_string(getpid()));
    std::filesystem::create_directories(tmp);
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      const std::string name = entry.path().filename().string();
      if (name.size() < 10 || name.substr(name.size() - 10) != ".pickle.xz") continue;
      const std::string trace = (tmp / (name.substr(0, name.size() - 10) + ".mrt")).string();
      TraceWriter writer(trace);
      import_file(entry.path().string(), writer);
      out.push_back(trace);
    }
    if (out.empty()) throw std::runtime_error(dir.string() + ": no traces");
    return out;
  }();
  return traces;
}

void BM_CheckAllSharedTraces(benchmark::State& state) {
  const auto& traces = shared_traces();
  for (auto _ : state) {
    size_t cases = 0;
    for (const auto& t : traces) {
      ReplayOptions base;
      base.trace_path = t;
      const auto replays = results::replay_policies(base, kPolicies);
      for (size_t p = 0; p < kPolicies.size(); ++p) {
        const results::CaseInput input{results::trace_name(t), kPolicies[p],
                                       results::metric_values(replays.metrics[p], std::nullopt), std::nullopt};
        benchmark::DoNotOptimize(
            results::evaluate_case(input, nullptr, false, {}, results::Limits{{}, 10.0, false}, {}));
        ++cases;
      }
    }
    state.counters["cases"] = static_cast<double>(cases);
  }
}
BENCHMARK(BM_CheckAllSharedTraces)->Unit(benchmark::kMillisecond)->MinTime(2.0);

// What the command runs: traces on every hardware thread.
void BM_CheckAllSharedTracesThreaded(benchmark::State& state) {
  std::vector<ReplayOptions> bases;
  for (const auto& t : shared_traces()) {
    ReplayOptions base;
    base.trace_path = t;
    bases.push_back(base);
  }
  for (auto _ : state) benchmark::DoNotOptimize(results::replay_traces(bases, kPolicies));
}
BENCHMARK(BM_CheckAllSharedTracesThreaded)->Unit(benchmark::kMillisecond)->MinTime(2.0)->UseRealTime();

void BM_SameReplaysOneByOne(benchmark::State& state) {
  const auto& traces = shared_traces();
  for (auto _ : state) {
    for (const auto& t : traces)
      for (const auto& p : kPolicies) {
        ReplayOptions o;
        o.trace_path = t;
        o.policy_spec = p;
        benchmark::DoNotOptimize(run_replay(o));
      }
  }
}
BENCHMARK(BM_SameReplaysOneByOne)->Unit(benchmark::kMillisecond)->MinTime(2.0);

}  // namespace
}  // namespace memreplay

BENCHMARK_MAIN();
