// libmemreplay_alloc.so through its C entry points (memreplay_alloc.h), as PyTorch's
// CUDAPluggableAllocator calls them, on the simulator (no GPU here). The library's allocator is one
// per process, so the whole life of it is one test: errors first, then use.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>

#include "replayer/live/memreplay_alloc.h"
#include "replayer/replay_runner.h"
#include "replayer/sim/sim_device.h"
#include "tests/support/test_support.h"

#ifdef MEMREPLAY_ALLOC_LIB

namespace memreplay {
namespace {

struct AllocLibrary {
  decltype(&memreplay_alloc_configure) configure;
  decltype(&memreplay_alloc_malloc) malloc;
  decltype(&memreplay_alloc_free) free;
  decltype(&memreplay_alloc_record_stream) record_stream;
  decltype(&memreplay_alloc_empty_cache) empty_cache;
  decltype(&memreplay_alloc_set_memory_fraction) set_memory_fraction;
  decltype(&memreplay_alloc_last_error) last_error;
  decltype(&memreplay_alloc_stats) stats;
  decltype(&memreplay_alloc_finish_trace) finish_trace;

  std::string error() const {
    char text[512];
    last_error(text, sizeof text);
    return text;
  }
  std::string stats_json() const {
    std::string json(stats(nullptr, 0) + 1, '\0');
    json.resize(stats(json.data(), json.size()));
    return json;
  }
};

template <class F>
void find(void* library, F& function, const char* name) {
  function = reinterpret_cast<F>(dlsym(library, name));
  ASSERT_NE(function, nullptr) << name;
}

class AllocCApi : public testing::TempDirTest {};

TEST_F(AllocCApi, ServesAPluggableAllocatorsCallsThroughAPolicy) {
  void* handle = dlopen(MEMREPLAY_ALLOC_LIB, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  AllocLibrary lib{};
  find(handle, lib.configure, "memreplay_alloc_configure");
  find(handle, lib.malloc, "memreplay_alloc_malloc");
  find(handle, lib.free, "memreplay_alloc_free");
  find(handle, lib.record_stream, "memreplay_alloc_record_stream");
  find(handle, lib.empty_cache, "memreplay_alloc_empty_cache");
  find(handle, lib.set_memory_fraction, "memreplay_alloc_set_memory_fraction");
  find(handle, lib.last_error, "memreplay_alloc_last_error");
  find(handle, lib.stats, "memreplay_alloc_stats");
  find(handle, lib.finish_trace, "memreplay_alloc_finish_trace");
  // LiveAllocator::allocate, compiled into the library: hidden (the policies' own shared library,
  // which a plain build links, exports its symbols, and dlsym looks there too).
  EXPECT_EQ(dlsym(handle, "_ZN9memreplay13LiveAllocator8allocateEmmt"), nullptr) << "only the C API is exported";

  char error[512] = {};
  // Bad input: one line, no crash.
  EXPECT_NE(lib.configure("no_such_policy", "sim", nullptr, nullptr, error, sizeof error), 0);
  EXPECT_NE(std::string(error).find("no_such_policy"), std::string::npos) << error;
  EXPECT_EQ(std::string(error).find('\n'), std::string::npos) << error;
  EXPECT_NE(lib.configure("/no/such/plugin.so", "sim", nullptr, nullptr, error, sizeof error), 0);
  EXPECT_NE(std::string(error).find("/no/such/plugin.so"), std::string::npos) << error;
  EXPECT_NE(lib.configure("bfc", "tpu", nullptr, nullptr, error, sizeof error), 0);
  EXPECT_NE(std::string(error).find("tpu"), std::string::npos) << error;
#ifdef MEMREPLAY_EXAMPLE_PLUGIN
  EXPECT_EQ(lib.configure(MEMREPLAY_EXAMPLE_PLUGIN, "sim", nullptr, nullptr, error, sizeof error), 0) << error;
#endif
  EXPECT_NE(lib.set_memory_fraction(1.5, 0), 0);
  EXPECT_EQ(lib.set_memory_fraction(0.5, 0), 0) << lib.error();

  const std::string trace = path("run.mrt");
  ASSERT_EQ(lib.configure("bfc", "sim", trace.c_str(), MEMREPLAY_RECORD_LIB, error, sizeof error), 0) << error;
  void* stream_a = reinterpret_cast<void*>(uintptr_t{0x10});
  void* stream_b = reinterpret_cast<void*>(uintptr_t{0x20});
  void* a = lib.malloc(1 << 20, 0, stream_a);
  void* b = lib.malloc(3000, 0, stream_b);
  ASSERT_NE(a, nullptr) << lib.error();
  ASSERT_NE(b, nullptr) << lib.error();
  // An empty tensor's request: no memory and no error, as PyTorch's own allocator; a negative
  // size is an error with its reason.
  EXPECT_EQ(lib.malloc(0, 0, stream_a), nullptr);
  EXPECT_EQ(lib.error(), "");
  EXPECT_EQ(lib.malloc(-5, 0, stream_a), nullptr);
  EXPECT_NE(lib.error().find("-5 bytes"), std::string::npos) << lib.error();
  EXPECT_EQ(lib.record_stream(a, stream_b), 1);
  lib.free(a, 1 << 20, 0, stream_a);
  // The cap of the memory fraction: half the simulated H200.
  EXPECT_EQ(lib.malloc(ssize_t{100} << 30, 0, stream_a), nullptr);
  EXPECT_NE(lib.error().find("tried to allocate 100.00 GiB"), std::string::npos) << lib.error();
  EXPECT_NE(lib.configure("memreplay", "sim", nullptr, nullptr, error, sizeof error), 0) << "refused once in use";
  EXPECT_NE(std::string(error).find("before the first CUDA allocation"), std::string::npos) << error;
  EXPECT_NE(lib.set_memory_fraction(0.25, 0), 0);
  lib.free(b, 3000, 0, stream_b);
  lib.empty_cache();

  const std::string stats = lib.stats_json();
  EXPECT_NE(stats.find("\"policy\": \"bfc\""), std::string::npos) << stats;
  EXPECT_NE(stats.find("\"allocated_bytes.all.current\": 0"), std::string::npos) << stats;
  EXPECT_NE(stats.find("\"num_ooms\": 1"), std::string::npos) << stats;
  EXPECT_NE(stats.find("\"reserved_bytes.all.current\": 0"), std::string::npos) << stats;
  ASSERT_EQ(lib.finish_trace(), 1);

  // The run's own trace replays on the simulator to the same reserved peak.
  ReplayOptions replay;
  replay.trace_path = trace;
  replay.policy_spec = "bfc";
  replay.capacity = static_cast<uint64_t>(0.5 * static_cast<double>(kH200TotalMemory));  // the run's cap
  const ReplayMetrics metrics = run_replay(replay);
  EXPECT_NE(stats.find("\"reserved_bytes.all.peak\": " + std::to_string(metrics.reserved_peak)), std::string::npos)
      << stats;
}

}  // namespace
}  // namespace memreplay

#endif  // MEMREPLAY_ALLOC_LIB
