// What the replay benchmarks share: gpt2_generate.default imported once per process (the trace
// file and its events in memory) and the timed loop that replays those events through a fresh
// device and policy per iteration (engine + policy + device timed; items/s = replayed events/s).
#pragma once

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "proto/trace_reader.h"
#include "proto/trace_writer.h"
#include "recorder/import/import.h"
#include "replayer/replay_session.h"

namespace memreplay::bench {

// The imported trace, written once to a per-process temp file removed when the process exits.
inline const std::string& gpt2_generate_trace() {
  struct TempTrace {
    std::string path;
    ~TempTrace() { std::filesystem::remove(path); }
  };
  static const TempTrace trace = [] {
    TempTrace imported{(std::filesystem::temp_directory_path() /
                        ("memreplay-bench-" + std::to_string(getpid()) + "-gpt2_generate.mrt"))
                           .string()};
    TraceWriter writer(imported.path);
    import_file(std::string(MEMREPLAY_REAL_DATA_DIR) + "/traces/gpt2_generate.default.pickle.xz", writer);
    return imported;
  }();
  return trace.path;
}

inline const std::vector<Event>& gpt2_generate_events() {
  static const std::vector<Event> events = TraceReader::read_all(gpt2_generate_trace());
  return events;
}

// Replays `events` once per iteration; device and policy are built untimed. Returns the number
// of events the last replay counted, and sets items processed.
template <typename MakeDevice>
uint64_t replay_each_iteration(benchmark::State& state, const std::vector<Event>& events, MakeDevice make_device,
                               const std::function<std::unique_ptr<Policy>(Device&)>& make_policy) {
  uint64_t replayed = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto device = make_device();
    auto policy = make_policy(*device);
    ReplaySession session(*policy, *device, ReplayOptions{});
    state.ResumeTiming();
    session.feed_batch(events, 0);
    state.PauseTiming();
    const ReplayMetrics m = session.finish();
    replayed = m.events;
    benchmark::DoNotOptimize(m.reserved_peak);
    state.ResumeTiming();
  }
  state.SetItemsProcessed(static_cast<int64_t>(replayed * state.iterations()));
  return replayed;
}

}  // namespace memreplay::bench
