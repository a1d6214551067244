// Importing a PyTorch memory snapshot: unpickling and converting to events, on one core.
//
//   ./import_bench                                         shared/traces/gpt2_generate.default
//   MEMREPLAY_BENCH_SNAPSHOT=snap.pickle.xz ./import_bench   another snapshot
//
// The file is read and decompressed once, outside the timing. items_per_second counts trace
// entries. Compare with Python on the same decompressed bytes:
//   python3 -m timeit -s "import pickle, lzma; d = lzma.open('FILE').read()" "pickle.loads(d)"
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>

#include "proto/trace_sink.h"
#include "recorder/import/input/decompress.h"
#include "recorder/import/pytorch/pytorch_snapshot_importer.h"
#include "recorder/import/unpickler/pickle_reader.h"

namespace memreplay {
namespace {

std::string snapshot_path() {
  if (const char* path = std::getenv("MEMREPLAY_BENCH_SNAPSHOT")) return path;
  return std::string(MEMREPLAY_REAL_DATA_DIR) + "/traces/gpt2_generate.default.pickle.xz";
}

const std::string& snapshot_bytes() {
  static const std::string bytes = read_decompressed(snapshot_path());
  return bytes;
}

// Counts what it is given and keeps nothing: the cost measured is the importer's own, not that
// of a growing vector in the sink.
class CountingSink final : public TraceSink {
 public:
  void begin(const proto::TraceHeader&) override {}
  uint32_t intern_stack(std::span<const FrameText>) override { return ++stacks; }
  void append(const Event&) override { ++events; }
  void append_annotation(const Event&, const KeyValues&) override { ++events; }
  void finish() override {}
  uint64_t events = 0;
  uint32_t stacks = 0;
};

uint64_t entries_of(const pickle::Tree& tree) {
  uint64_t entries = 0;
  if (auto traces = tree.root().get("device_traces"))
    for (pickle::Value device : traces->items()) entries += device.size();
  return entries;
}

// Unpickle + conversion into events. Into a CountingSink: what `memreplay import` spends after
// decompression, the writer apart; into a CollectingSink: as tests and small tools use it (the
// sink's vectors included).
template <typename Sink>
void BM_Import(benchmark::State& state) {
  const std::string& bytes = snapshot_bytes();
  const uint64_t entries = entries_of(pickle::unpickle(bytes, snapshot_path()));
  for (auto _ : state) {
    Sink sink;
    import_pytorch_snapshot_pickle(bytes, snapshot_path(), sink);
    benchmark::DoNotOptimize(sink);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * entries));
  state.counters["entries"] = static_cast<double>(entries);
  state.counters["pickle_MB"] = static_cast<double>(bytes.size()) / 1e6;
}
BENCHMARK(BM_Import<CountingSink>)->Name("BM_ImportGpt2Generate")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Import<CollectingSink>)
    ->Name("BM_ImportGpt2GenerateCollecting")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The unpickler alone.
void BM_UnpickleGpt2Generate(benchmark::State& state) {
  const std::string& bytes = snapshot_bytes();
  for (auto _ : state) {
    const pickle::Tree tree = pickle::unpickle(bytes, snapshot_path());
    benchmark::DoNotOptimize(tree.root().id());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes.size()));
}
BENCHMARK(BM_UnpickleGpt2Generate)->Unit(benchmark::kMillisecond)->UseRealTime();

// Reading the .xz file and decompressing it, for scale (not part of the import target).
void BM_DecompressGpt2Generate(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(read_decompressed(snapshot_path()).size());
}
BENCHMARK(BM_DecompressGpt2Generate)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace memreplay

BENCHMARK_MAIN();
