// Reading and writing .mrt traces, in events per second on one core.
//
//   MEMREPLAY_BENCH_TRACE=trace.mrt ./trace_read_bench     reads that trace
//   ./trace_read_bench                                     a synthetic 1M-event trace (below)
//
// bytes_per_event is the file's size over its events.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "proto/trace_reader.h"
#include "proto/trace_writer.h"

namespace memreplay {
namespace {

// Shaped after the PyTorch training snapshots in shared/traces: each iteration repeats the same
// program of allocations and frees (one of a few variants, as with varying batch sizes), sizes
// from ~1,400 distinct values (a few very common), freed blocks' addresses reused for the next
// block of their size, a segment_alloc when the cache runs dry, times in whole microseconds mostly
// 0-10 us apart, one stream, and a stack on every alloc drawn from a few hundred.
std::vector<Event> synthetic_events(size_t count) {
  std::mt19937_64 rng(42);
  std::vector<uint64_t> sizes;
  for (int i = 0; i < 1400; ++i) sizes.push_back(512 * (1 + rng() % 4096));
  std::geometric_distribution<size_t> size_rank(0.02);
  std::geometric_distribution<uint64_t> gap_us(0.2);

  // An iteration's program: allocate (size, stack) or free the k-th most recent live block.
  struct Step {
    bool alloc;
    uint64_t size_or_pick;
    uint32_t stack;
  };
  std::vector<std::vector<Step>> programs(3);
  for (auto& program : programs) {
    size_t live = 0;
    for (int i = 0; i < 3000 || live > 0; ++i) {
      if (i < 3000 && (live == 0 || rng() % 2 == 0)) {
        program.push_back({true, sizes[size_rank(rng) % sizes.size()], static_cast<uint32_t>(1 + rng() % 300)});
        ++live;
      } else {
        program.push_back({false, std::min<uint64_t>(rng() % 16, live - 1), 0});  // recent blocks die first
        --live;
      }
    }
  }

  std::unordered_map<uint64_t, std::vector<uint64_t>> cached;  // size -> free addresses
  std::vector<std::pair<uint64_t, uint64_t>> live;  // (address, size)
  uint64_t time = 1'722'000'000'000'000'000ull;
  uint64_t next_segment = 0x7f00'0000'0000ull, bump = 0, segment_end = 0;
  std::vector<Event> events;
  events.reserve(count + 3000);
  auto emit = [&](EventKind kind, uint64_t address, uint64_t size, uint32_t stack) {
    time += rng() % 10 < 3 ? 0 : gap_us(rng) * 1000;
    events.push_back(Event{.kind = kind, .time_ns = time, .address = address, .size = size, .stack = stack});
  };
  while (events.size() < count) {
    for (const Step& step : programs[rng() % 10 < 8 ? 0 : 1 + rng() % 2]) {
      if (step.alloc) {
        uint64_t address;
        if (auto& free = cached[step.size_or_pick]; !free.empty()) {
          address = free.back();
          free.pop_back();
        } else {
          if (bump + step.size_or_pick > segment_end) {
            const uint64_t segment = std::max<uint64_t>(step.size_or_pick, 20ull << 20);
            bump = next_segment;
            segment_end = bump + segment;
            next_segment = segment_end + (2ull << 20);
            emit(EventKind::segment_alloc, bump, segment, 0);
          }
          address = bump;
          bump += step.size_or_pick;
        }
        live.emplace_back(address, step.size_or_pick);
        emit(EventKind::alloc, address, step.size_or_pick, step.stack);
      } else {
        const size_t pick = live.size() - 1 - step.size_or_pick;
        const auto [address, size] = live[pick];
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(pick));
        cached[size].push_back(address);
        emit(EventKind::free_requested, address, size, 0);
        emit(EventKind::free_completed, address, size, 0);
      }
    }
  }
  events.resize(count);
  return events;
}

const std::vector<Event>& bench_events() {
  static const std::vector<Event> events = synthetic_events(1'000'000);
  return events;
}

void write_events(const std::string& path, const std::vector<Event>& events, TraceWriterOptions options) {
  TraceWriter writer(path, options);
  proto::TraceHeader header;
  header.set_source("api");
  writer.begin(header);
  for (uint32_t stack = 1; stack <= 300; ++stack)
    writer.intern_stack(
        std::vector<FrameText>{{"model.py", stack, "layer" + std::to_string(stack % 24)}, {"train.py", 40, "step"}});
  for (const Event& e : events) writer.append(e);
  writer.finish();
}

// A temporary file, removed at exit.
struct TempTrace {
  std::string path =
      (std::filesystem::temp_directory_path() / ("memreplay_bench_" + std::to_string(::getpid()) + ".mrt")).string();
  ~TempTrace() { std::filesystem::remove(path); }
};

const std::string& trace_to_read() {
  static TempTrace synthetic;
  static const std::string path = [] {
    if (const char* given = std::getenv("MEMREPLAY_BENCH_TRACE")) return std::string(given);
    write_events(synthetic.path, bench_events(), {});
    return synthetic.path;
  }();
  return path;
}

void BM_ReadTrace(benchmark::State& state) {
  const std::string& path = trace_to_read();
  std::vector<Event> batch;
  uint64_t events = 0;
  for (auto _ : state) {
    TraceReader reader(path);
    while (reader.next_batch(batch)) {
      events += batch.size();
      benchmark::DoNotOptimize(batch.data());
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(events));
  state.counters["bytes_per_event"] = static_cast<double>(std::filesystem::file_size(path)) *
                                      static_cast<double>(state.iterations()) / static_cast<double>(events);
}
BENCHMARK(BM_ReadTrace)->Unit(benchmark::kMillisecond);

// Argument: the zstd level (the writer's default first).
void BM_WriteTrace(benchmark::State& state) {
  TempTrace out;
  const auto& events = bench_events();
  for (auto _ : state) write_events(out.path, events, {.zstd_level = static_cast<int>(state.range(0))});
  state.SetItemsProcessed(static_cast<int64_t>(events.size() * state.iterations()));
  state.counters["bytes_per_event"] =
      static_cast<double>(std::filesystem::file_size(out.path)) / static_cast<double>(events.size());
}
BENCHMARK(BM_WriteTrace)->Arg(TraceWriterOptions{}.zstd_level)->Arg(3)->Arg(19)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace memreplay

BENCHMARK_MAIN();
