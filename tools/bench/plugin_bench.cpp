// Plugin call overhead: the example plugin's policy (examples/plugin/exact_size_plugin.c)
//   BM_PluginPolicy/built_in   compiled into this program and called directly (a C++ Policy
//                              calling the C functions, the device passed through without the bridge's checks)
//   BM_PluginPolicy/plugin     the same code dlopen'ed through --plugin's loader: C ABI calls
//                              and the checks that catch a misbehaving plugin
// side by side on gpt2_generate.default (302,078 events in memory, engine + policy timed) over a
// bump-pointer device (SimDevice's driver address model would dominate: this policy keeps ~11,000
// cudaMallocs live); the difference per event is the plugin boundary's cost.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "policies/plugin/memreplay_policy_plugin.h"
#include "policies/plugin/plugin_loader.h"
#include "policies/registry.h"
#include "proto/trace_reader.h"
#include "proto/trace_writer.h"
#include "recorder/import/import.h"
#include "replayer/replay_session.h"
#include "tools/bench/bench_support.h"
#include "tools/bench/bump_device.h"

extern "C" const memreplay_policy_plugin* example_plugin_built_in_table(void);

namespace memreplay {
namespace {

// The plugin's functions called directly, its device calls forwarded without the bridge's checks.
class BuiltInExample final : public Policy {
 public:
  explicit BuiltInExample(Device& device) : table_(*example_plugin_built_in_table()), device_(device) {
    const memreplay_device_api api{
        this, &malloc_cb, &free_cb, nullptr, nullptr, nullptr, nullptr, device.granularity(), device.total_memory(), 0};
    char error[128];
    state_ = table_.create("", &api, error, sizeof error);
  }
  ~BuiltInExample() override { table_.destroy(state_); }

 private:
  static int malloc_cb(void* context, uint64_t bytes, uint64_t* address) {
    const auto got = static_cast<BuiltInExample*>(context)->device_.malloc(bytes);
    if (got) *address = *got;
    return got ? 0 : 1;
  }
  static void free_cb(void* context, uint64_t address) {
    free_held(static_cast<BuiltInExample*>(context)->device_, address);
  }
  std::optional<Block> do_allocate(uint64_t bytes, StreamId stream) override {
    uint64_t address = 0, size = 0;
    if (table_.allocate(state_, bytes, stream, &address, &size) != MEMREPLAY_PLUGIN_OK) return std::nullopt;
    return Block{address, size};
  }
  bool do_free(uint64_t address, StreamId stream) override {
    return table_.free(state_, address, stream) == MEMREPLAY_PLUGIN_OK;
  }
  void do_empty_cache() override { table_.empty_cache(state_); }

  const memreplay_policy_plugin& table_;
  Device& device_;
  void* state_;
};

void replay(benchmark::State& state, const std::function<std::unique_ptr<Policy>(Device&)>& make) {
  bench::replay_each_iteration(
      state, bench::gpt2_generate_events(), [] { return std::make_unique<bench::BumpDevice>(); }, make);
}

void BM_PluginPolicy_built_in(benchmark::State& state) {
  replay(state, [](Device& device) { return std::make_unique<BuiltInExample>(device); });
}
void BM_PluginPolicy_plugin(benchmark::State& state) {
  static const std::string name = load_policy_plugin(MEMREPLAY_EXAMPLE_PLUGIN);
  replay(state, [](Device& device) { return PolicyRegistry::instance().create(name, device); });
}
BENCHMARK(BM_PluginPolicy_built_in)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PluginPolicy_plugin)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace memreplay

BENCHMARK_MAIN();
