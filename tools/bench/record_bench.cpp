// What live recording costs.
//
//   BM_RecordHotPath/threads:N   one recording call on N threads at once (recording::on_alloc):
//                                the cost the recorded program pays per event
//   BM_RecordCApi                one memreplay_record() call into libmemreplay_record.so loaded
//                                with dlopen, exactly as the PyTorch tracker makes it (under the
//                                allocator's lock, so one thread at a time). The library is looked
//                                for in $MEMREPLAY_RECORD_LIBRARY, else ../recorder/ next to this
//                                program (the build tree); skipped when it is not there
//   BM_RecordCApiColdCache/0|1   the same call (1) or none (0), under a mutex, between sweeps
//                                over 1 MiB of other memory: a training step calls the allocator
//                                between the interpreter's and the dispatcher's work, so the
//                                recorder's lines are cold. Timed: lock, call, unlock (the
//                                unlock waits for the call's stores). /1 minus /0 is what an
//                                event costs there, cache misses included
//   BM_RecordEndToEnd            the same calls plus the wait until they are in the file: the
//                                whole C++ API -> writer -> .mrt path per event (the writer
//                                thread runs on another core meanwhile)
//   BM_LiveTraceWriterAppend     the writer thread's own work per event (columns, zstd, write)
// What the CUDA interposer adds per call is measured apart: tools/bench/interposer_bench.cpp,
// run A/B by tools/bench/interposer_ab.sh.
//
// Each hot-path batch fits in the thread's buffer and is flushed with the timer paused, so no
// event is dropped and the numbers are the recording call itself; the "dropped" counter says so.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "recorder/live/live_trace_writer.h"
#include "recorder/live/memreplay_record_loader.h"
#include "recorder/live/recording_api.h"

namespace memreplay {
namespace {

namespace fs = std::filesystem;
namespace rec = memreplay::recording;

constexpr int64_t kBatch = 1 << 15;

std::string bench_path(const std::string& name) {
  return (fs::temp_directory_path() / ("memreplay_bench_" + std::to_string(::getpid()) + "_" + name)).string();
}

rec::Options bench_options() {
  rec::Options options;
  options.thread_buffer_events = 1u << 16;  // two batches: nothing is dropped
  options.flush_interval = std::chrono::milliseconds(500);
  return options;
}

// Addresses and sizes like a caching allocator's: a few hundred blocks reused.
struct Program {
  std::vector<uint64_t> addresses, sizes;
  Program() {
    std::mt19937_64 rng(1);
    for (int i = 0; i < 512; ++i) {
      addresses.push_back(0x7f0000000000ull + (rng() % 100000) * 512);
      sizes.push_back(512 * (1 + rng() % 4096));
    }
  }
};

void BM_RecordHotPath(benchmark::State& state) {
  static std::atomic<int> ready{0};
  if (state.thread_index() == 0) {
    rec::start(bench_path("hot.mrt"), bench_options());
    ready = 1;
  }
  while (ready.load() == 0) {}
  const Program program;
  size_t i = 0;
  while (state.KeepRunningBatch(kBatch)) {
    for (int64_t k = 0; k < kBatch; ++k, ++i)
      rec::on_alloc(reinterpret_cast<const void*>(program.addresses[i & 511]), program.sizes[i & 511], 7);
    state.PauseTiming();
    rec::flush();  // empty the buffer, untimed
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations());
  if (state.thread_index() == 0) {
    const rec::Stats stats = rec::stats();
    state.counters["dropped"] = static_cast<double>(stats.dropped);
    rec::stop();
    ready = 0;
    fs::remove(bench_path("hot.mrt"));
  }
}
BENCHMARK(BM_RecordHotPath)->Threads(1)->Threads(2)->Threads(4)->UseRealTime();

// The C API of libmemreplay_record.so, found with dlsym as the tracker finds it (the copy linked
// into this program would skip the shared library's TLS and call costs).
struct RecordLibrary : memreplay_record_library {
  std::string error;

  RecordLibrary() {
    std::string path;
    if (const char* env = std::getenv("MEMREPLAY_RECORD_LIBRARY")) {
      path = env;
    } else {
      std::error_code ec;
      path =
          (fs::read_symlink("/proc/self/exe", ec).parent_path() / "../recorder/live/libmemreplay_record.so").string();
    }
    error = load(path);
    if (!error.empty()) error += " (set MEMREPLAY_RECORD_LIBRARY)";
  }
};

void BM_RecordCApi(benchmark::State& state) {
  static const RecordLibrary api;
  if (!api.error.empty()) {
    state.SkipWithError(api.error.c_str());
    return;
  }
  const memreplay_options options{0, 500, 1u << 16};  // two batches: nothing is dropped
  char error[256] = "";
  memreplay_recorder* r = api.open(bench_path("capi.mrt").c_str(), nullptr, 0, &options, error, sizeof error);
  if (r == nullptr) {
    state.SkipWithError(error);
    return;
  }
  const Program program;
  size_t i = 0;
  while (state.KeepRunningBatch(kBatch)) {
    for (int64_t k = 0; k < kBatch; ++k, ++i)
      api.record(r, MEMREPLAY_ALLOC, 0, 7, program.addresses[i & 511], program.sizes[i & 511], 0, 0, 0);
    state.PauseTiming();
    api.flush(r);  // empty the buffer, untimed
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations());
  memreplay_stats stats{};
  api.close(r, &stats);
  api.destroy(r);
  state.counters["dropped"] = static_cast<double>(stats.dropped);
  fs::remove(bench_path("capi.mrt"));
}
BENCHMARK(BM_RecordCApi)->UseRealTime();

void BM_RecordCApiColdCache(benchmark::State& state) {
  static const RecordLibrary api;
  if (!api.error.empty()) {
    state.SkipWithError(api.error.c_str());
    return;
  }
  const bool record = state.range(0) != 0;
  char error[256] = "";
  memreplay_recorder* r = api.open(bench_path("cold.mrt").c_str(), nullptr, 0, nullptr, error, sizeof error);
  if (r == nullptr) {
    state.SkipWithError(error);
    return;
  }
  const Program program;
  std::vector<uint8_t> other(1 << 20);
  std::mutex allocator_lock;
  size_t i = 0;
  for (auto _ : state) {
    for (size_t k = 0; k < other.size(); k += 64) ++other[k];
    const auto start = std::chrono::steady_clock::now();
    {
      std::lock_guard lock(allocator_lock);
      if (record) api.record(r, MEMREPLAY_ALLOC, 0, 7, program.addresses[i & 511], program.sizes[i & 511], 0, 0, 0);
    }
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    ++i;
  }
  benchmark::DoNotOptimize(other.data());
  memreplay_stats stats{};
  api.close(r, &stats);
  api.destroy(r);
  state.counters["dropped"] = static_cast<double>(stats.dropped);
  fs::remove(bench_path("cold.mrt"));
}
BENCHMARK(BM_RecordCApiColdCache)->Arg(0)->Arg(1)->UseManualTime()->Iterations(100'000);

void BM_RecordEndToEnd(benchmark::State& state) {
  rec::start(bench_path("e2e.mrt"), bench_options());
  const Program program;
  size_t i = 0;
  while (state.KeepRunningBatch(kBatch)) {
    for (int64_t k = 0; k < kBatch; ++k, ++i)
      rec::on_alloc(reinterpret_cast<const void*>(program.addresses[i & 511]), program.sizes[i & 511], 7);
    rec::flush();  // timed: until the batch is in the file
  }
  state.SetItemsProcessed(state.iterations());
  const rec::Stats stats = rec::stats();
  rec::stop();
  state.counters["dropped"] = static_cast<double>(stats.dropped);
  state.counters["bytes_per_event"] = static_cast<double>(fs::file_size(bench_path("e2e.mrt"))) /
                                      static_cast<double>(std::max<uint64_t>(1, stats.written));
  fs::remove(bench_path("e2e.mrt"));
}
BENCHMARK(BM_RecordEndToEnd)->UseRealTime();

void BM_LiveTraceWriterAppend(benchmark::State& state) {
  LiveTraceHeader header;
  header.source = "bench";
  LiveTraceWriter writer(bench_path("writer.mrt"), header, 16384, static_cast<int>(state.range(0)));
  const Program program;
  Event e;
  e.kind = EventKind::alloc;
  e.stream = 7;
  uint64_t i = 0, time = 1'722'000'000'000'000'000ull;
  for (auto _ : state) {
    e.address = program.addresses[i & 511];
    e.size = program.sizes[i & 511];
    e.time_ns = time += 700 + (i & 3) * 100;
    writer.append(e);
    ++i;
  }
  writer.finish();
  state.SetItemsProcessed(state.iterations());
  state.counters["bytes_per_event"] =
      static_cast<double>(fs::file_size(bench_path("writer.mrt"))) / static_cast<double>(std::max<uint64_t>(1, i));
  fs::remove(bench_path("writer.mrt"));
}
BENCHMARK(BM_LiveTraceWriterAppend)->Arg(3)->Arg(9);

}  // namespace
}  // namespace memreplay

BENCHMARK_MAIN();
