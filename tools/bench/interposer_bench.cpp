// What the CUDA interposer (libmemreplay_interposer.so) costs a program per call. This program
// links the CUDA runtime dynamically (libcudart.so.13), so with LD_PRELOAD of the interposer its
// calls go through the interposer's wrappers; tools/bench/interposer_ab.sh runs it alternately without
// and with the interposer and reports the difference per call and per recorded event.
//
//   BM_MallocFreePair/1048576        cudaMalloc + cudaFree of 1 MiB (the pair; on a GPU the
//                                    driver's own tens of µs and their noise dwarf the interposer)
//   BM_MallocFreeAsyncPair/1048576   cudaMallocAsync + cudaFreeAsync of 1 MiB on one stream, served
//                                    from the device's default pool (release threshold UINT64_MAX:
//                                    nothing goes back to the driver)
//   BM_EventRecordWaitPair           cudaEventRecord on stream A + cudaStreamWaitEvent on stream B
//                                    (both recorded by the interposer)
//
// Each iteration is one pair of calls: the time per iteration is ns per pair. Counters:
// calls_per_pair and events_per_pair (events the interposer records per pair), per_call (time
// per call), interposed (1 when cudaMalloc resolves to the interposer: the check that the A/B
// runs are what they claim).
//
// Without a GPU, run it against the fake runtime and driver of tests/fake_cuda
// (LD_LIBRARY_PATH=BUILD/tests/fake_cuda): a fake call costs a few ns, so interposed minus plain
// is the interposer's own cost per call, recording included.
//
// Environment (tools/bench/interposer_ab.sh sets both): MEMREPLAY_BENCH_PAUSE_US, an untimed sleep
// after every batch of 1,024 pairs (run_pairs says why); MEMREPLAY_BENCH_BATCHES, a fixed number
// of batches per run (main says why).
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace memreplay {
namespace {

constexpr size_t kPairBytes = size_t{1} << 20;
constexpr benchmark::IterationCount kBatch = 1024;  // pairs between untimed synchronizations
constexpr int kWarmUpBatches = 8;

bool fail(benchmark::State& state, const char* what, cudaError_t rc) {
  if (rc == cudaSuccess) return false;
  state.SkipWithError((std::string(what) + ": " + cudaGetErrorString(rc)).c_str());
  return true;
}

bool no_device(benchmark::State& state) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    state.SkipWithError("no CUDA device");
    return true;
  }
  return fail(state, "cudaSetDevice", cudaSetDevice(0));
}

// Whether the program's cudaMalloc is the interposer's wrapper.
bool interposed() {
  Dl_info info{};
  void* fn = dlsym(RTLD_DEFAULT, "cudaMalloc");
  return fn != nullptr && dladdr(fn, &info) != 0 && info.dli_fname != nullptr &&
         std::strstr(info.dli_fname, "memreplay_interposer") != nullptr;
}

void report(benchmark::State& state, int calls_per_pair, int events_per_pair) {
  state.counters["calls_per_pair"] = calls_per_pair;
  state.counters["events_per_pair"] = events_per_pair;
  state.counters["per_call"] =
      benchmark::Counter(calls_per_pair, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["interposed"] = interposed() ? 1 : 0;
}

long env_number(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::strtol(v, nullptr, 10) : 0;
}

// The pairs run in batches of kBatch; between batches, with the timer paused, `sync` waits for the
// stream work and the program sleeps MEMREPLAY_BENCH_PAUSE_US. The sleep lets the interposer's
// writer thread empty the ring (16,384 events by default) before the next batch: against the fake
// runtime the calls come faster than a writer can compress them, and a full ring drops events,
// which is cheaper than recording them (tools/bench/interposer_ab.sh checks that none were dropped).
template <typename Pair, typename Sync>
void run_pairs(benchmark::State& state, Pair pair, Sync sync) {
  static const std::chrono::microseconds pause(env_number("MEMREPLAY_BENCH_PAUSE_US"));
  const auto batch = [&] {
    bool ok = true;
    for (benchmark::IterationCount i = 0; i < kBatch && ok; ++i) ok = pair();
    return ok;
  };
  const auto between_batches = [&] {
    sync();
    if (pause.count() > 0) std::this_thread::sleep_for(pause);
  };
  // Untimed warm-up: one pass through the interposer's ring (16,384 events) and its first stacks.
  bool ok = true;
  for (int i = 0; i < kWarmUpBatches && ok; ++i) {
    ok = batch();
    between_batches();
  }
  while (ok && state.KeepRunningBatch(kBatch)) {
    ok = batch();
    state.PauseTiming();
    between_batches();
    state.ResumeTiming();
  }
}

void BM_MallocFreePair(benchmark::State& state) {
  if (no_device(state)) return;
  const auto bytes = static_cast<size_t>(state.range(0));
  void* warm = nullptr;  // context creation and the first allocation out of the measurement
  if (fail(state, "cudaMalloc", cudaMalloc(&warm, bytes))) return;
  cudaFree(warm);
  run_pairs(
      state,
      [&] {
        void* p = nullptr;
        if (fail(state, "cudaMalloc", cudaMalloc(&p, bytes))) return false;
        benchmark::DoNotOptimize(p);
        return !fail(state, "cudaFree", cudaFree(p));
      },
      [] {});
  report(state, 2, 2);
}

void BM_MallocFreeAsyncPair(benchmark::State& state) {
  if (no_device(state)) return;
  const auto bytes = static_cast<size_t>(state.range(0));
  cudaMemPool_t pool = nullptr;
  if (fail(state, "cudaDeviceGetDefaultMemPool", cudaDeviceGetDefaultMemPool(&pool, 0))) return;
  uint64_t threshold = UINT64_MAX;  // keep every freed byte in the pool
  if (fail(state, "cudaMemPoolSetAttribute",
           cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold)))
    return;
  cudaStream_t stream = nullptr;
  if (fail(state, "cudaStreamCreate", cudaStreamCreate(&stream))) return;
  void* warm = nullptr;  // the pool's first reservation out of the measurement
  if (!fail(state, "cudaMallocAsync", cudaMallocAsync(&warm, bytes, stream))) {
    cudaFreeAsync(warm, stream);
    cudaStreamSynchronize(stream);
    run_pairs(
        state,
        [&] {
          void* p = nullptr;
          if (fail(state, "cudaMallocAsync", cudaMallocAsync(&p, bytes, stream))) return false;
          benchmark::DoNotOptimize(p);
          return !fail(state, "cudaFreeAsync", cudaFreeAsync(p, stream));
        },
        [&] { cudaStreamSynchronize(stream); });
  }
  cudaStreamDestroy(stream);
  report(state, 2, 2);
}

void BM_EventRecordWaitPair(benchmark::State& state) {
  if (no_device(state)) return;
  cudaStream_t a = nullptr, b = nullptr;
  cudaEvent_t event = nullptr;
  if (fail(state, "cudaStreamCreate", cudaStreamCreate(&a)) || fail(state, "cudaStreamCreate", cudaStreamCreate(&b)) ||
      fail(state, "cudaEventCreateWithFlags", cudaEventCreateWithFlags(&event, cudaEventDisableTiming)))
    return;
  run_pairs(
      state,
      [&] {
        return !fail(state, "cudaEventRecord", cudaEventRecord(event, a)) &&
               !fail(state, "cudaStreamWaitEvent", cudaStreamWaitEvent(b, event, 0));
      },
      [&] {
        cudaStreamSynchronize(a);
        cudaStreamSynchronize(b);
      });
  cudaEventDestroy(event);
  cudaStreamDestroy(a);
  cudaStreamDestroy(b);
  report(state, 2, 2);
}

}  // namespace
}  // namespace memreplay

// MEMREPLAY_BENCH_BATCHES=N: every run does exactly N batches of 1,024 pairs, plain and interposed
// alike (the fake runtime's plain pairs are ten times faster: timed runs would sleep ten times as
// often); unset, Google Benchmark's --benchmark_min_time decides.
int main(int argc, char** argv) {
  using namespace memreplay;
  const long batches = env_number("MEMREPLAY_BENCH_BATCHES");
  for (auto* b : {benchmark::RegisterBenchmark("BM_MallocFreePair", BM_MallocFreePair)->Arg(kPairBytes),
                  benchmark::RegisterBenchmark("BM_MallocFreeAsyncPair", BM_MallocFreeAsyncPair)->Arg(kPairBytes),
                  benchmark::RegisterBenchmark("BM_EventRecordWaitPair", BM_EventRecordWaitPair)}) {
    b->UseRealTime();
    if (batches > 0) b->Iterations(batches * kBatch);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
