// CudaDevice: the Device contract on a real GPU. The GPU tests skip cleanly where no GPU is
// visible (here and in CI); tools/gpu/check.sh runs them on the lent GPU machine. The registry
// tests check what `--device cuda` says where there is no GPU, and run everywhere else.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/units.h"
#include "policies/registry.h"
#include "proto/input_error.h"
#include "proto/trace_reader.h"
#include "proto/trace_writer.h"
#include "recorder/import/import.h"
#include "replayer/device_registry.h"
#include "replayer/replay_runner.h"
#include "tests/support/test_support.h"

#if MEMREPLAY_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "replayer/cuda/cuda_device.h"
#include "replayer/live/cuda_stream_order.h"
#endif

namespace memreplay {
namespace {

bool gpu_present() {
#if MEMREPLAY_HAVE_CUDA
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return count > 0;
#else
  return false;
#endif
}

#define SKIP_WITHOUT_GPU() \
  if (!gpu_present()) GTEST_SKIP() << "no CUDA device is visible"

std::string input_error_of(const std::string& spec) {
  try {
    DeviceRegistry::instance().create(spec, DeviceRequest{});
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(CudaDeviceRegistry, WithoutAGpuCudaIsAClearInputError) {
  if (gpu_present()) GTEST_SKIP() << "a GPU is visible";
  const std::string message = input_error_of("cuda:0");
  EXPECT_EQ(message.rfind("--device cuda:0: ", 0), 0u) << message;
#if MEMREPLAY_HAVE_CUDA
  EXPECT_NE(message.find("no CUDA device is visible (cudaGetDeviceCount: cuda"), std::string::npos) << message;
#else
  EXPECT_NE(message.find("unknown device"), std::string::npos) << message;
#endif
  EXPECT_EQ(message.find('\n'), std::string::npos) << "one line";
  // The simulator keeps working in the same process.
  EXPECT_NO_THROW(DeviceRegistry::instance().create("sim", DeviceRequest{}));
}

TEST(CudaDeviceRegistry, BadIndexIsAnInputError) {
  EXPECT_NE(input_error_of("cuda:abc").find("--device cuda:abc"), std::string::npos);
  EXPECT_NE(input_error_of("cuda:-1").find("--device cuda:-1"), std::string::npos);
  EXPECT_NE(input_error_of("cuda:").find("--device cuda:"), std::string::npos);
}

#if MEMREPLAY_HAVE_CUDA

std::unique_ptr<CudaDevice> make_device(std::optional<uint64_t> capacity = {}) {
  return std::make_unique<CudaDevice>(CudaDevice::Options{.index = 0, .capacity = capacity});
}

uint64_t gpu_free_bytes() {
  size_t free_bytes = 0;
  size_t total = 0;
  EXPECT_EQ(cudaMemGetInfo(&free_bytes, &total), cudaSuccess);
  return free_bytes;
}

TEST(CudaDevice, RegistryCreatesIt) {
  SKIP_WITHOUT_GPU();
  auto device = DeviceRegistry::instance().create("cuda:0", DeviceRequest{});
  ASSERT_NE(dynamic_cast<CudaDevice*>(device.get()), nullptr);
  EXPECT_GT(device->total_memory(), 0u);
  EXPECT_EQ(device->granularity() % (2 * kMiB), 0u);
  int count = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  EXPECT_NE(input_error_of("cuda:" + std::to_string(count)).find("there is no CUDA device"), std::string::npos);
}

TEST(CudaDevice, MallocAndFree) {
  SKIP_WITHOUT_GPU();
  auto device = make_device();
  const uint64_t before = device->free_memory();
  const auto a = device->malloc(64 * kMiB + 3);
  ASSERT_TRUE(a);
  EXPECT_EQ(*a % 256, 0u);
  EXPECT_EQ(cudaMemset(reinterpret_cast<void*>(*a), 0x5a, 64 * kMiB + 3), cudaSuccess);  // usable
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_LE(device->free_memory(), before - 64 * kMiB);
  const DeviceCounters& c = device->counters();
  EXPECT_EQ(c.malloc_calls, 1u);
  EXPECT_EQ(c.reserved_bytes, 64 * kMiB + 3);
  EXPECT_EQ(device->backed_ranges().size(), 1u);
  EXPECT_TRUE(device->free(*a));
  EXPECT_EQ(c.free_calls, 1u);
  EXPECT_EQ(c.reserved_bytes, 0u);
  EXPECT_EQ(c.reserved_peak, 64 * kMiB + 3);
  EXPECT_GT(c.device_call_ns, 0u);
}

TEST(CudaDevice, DriverOutOfMemoryIsAResult) {
  SKIP_WITHOUT_GPU();
  auto device = make_device();
  // Within the (absent) cap, so the driver is asked, and it cannot: the context holds some.
  EXPECT_FALSE(device->malloc(device->total_memory()));
  EXPECT_EQ(device->counters().failed_calls, 1u);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "the error state must be cleared";
  const auto a = device->malloc(kMiB);
  ASSERT_TRUE(a);
  EXPECT_TRUE(device->free(*a));
}

TEST(CudaDevice, MapAndUnmapPages) {
  SKIP_WITHOUT_GPU();
  auto device = make_device();
  const uint64_t page = device->granularity();
  const auto base = device->reserve_address(8 * page);
  ASSERT_TRUE(base);
  // One call maps three pages; another two more, apart.
  ASSERT_TRUE(device->map(*base, 3 * page));
  ASSERT_TRUE(device->map(*base + 4 * page, 2 * page));
  const DeviceCounters& c = device->counters();
  EXPECT_EQ(c.map_calls, 2u);
  EXPECT_EQ(c.reserved_bytes, 5 * page);
  EXPECT_EQ(cudaMemset(reinterpret_cast<void*>(*base), 1, 3 * page), cudaSuccess);
  EXPECT_EQ(cudaMemset(reinterpret_cast<void*>(*base + 4 * page), 2, 2 * page), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const auto ranges = device->backed_ranges();
  ASSERT_EQ(ranges.size(), 2u);
  EXPECT_EQ(ranges[0], std::make_pair(*base, *base + 3 * page));
  EXPECT_EQ(ranges[1], std::make_pair(*base + 4 * page, *base + 6 * page));
  // Any whole pages can go back: the middle one of the first three, then the rest.
  device->unmap(*base + page, page);
  EXPECT_EQ(c.reserved_bytes, 4 * page);
  EXPECT_EQ(device->backed_ranges().size(), 3u);
  device->unmap(*base, page);
  device->unmap(*base + 2 * page, page);
  device->unmap(*base + 4 * page, 2 * page);
  EXPECT_EQ(c.unmap_calls, 4u);
  EXPECT_EQ(c.reserved_bytes, 0u);
  EXPECT_EQ(c.reserved_peak, 5 * page);
  device->release_address(*base, 8 * page);
  EXPECT_EQ(c.reserve_calls, 1u);
  EXPECT_EQ(c.release_calls, 1u);
}

// A live job may grow its allocator while it captures a CUDA graph: a cudaMalloc, and a map of new
// pages, made during a capture in the default (global) mode leave the capture valid, and a stream
// order wait of the capturing stream on a stream outside the capture is left out of it.
TEST(CudaDevice, GrowingDuringAGraphCaptureLeavesTheCaptureValid) {
  SKIP_WITHOUT_GPU();
  auto device = make_device();
  cudaStream_t capturing = nullptr, other = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&capturing, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking), cudaSuccess);
  const uint64_t page = device->granularity();
  const auto base = device->reserve_address(4 * page);
  ASSERT_TRUE(base);
  CudaStreamOrder order;
  ASSERT_EQ(cudaStreamBeginCapture(capturing, cudaStreamCaptureModeGlobal), cudaSuccess);
  const auto block = device->malloc(8 * kMiB);
  ASSERT_TRUE(block);
  ASSERT_TRUE(device->map(*base, 2 * page));
  order.wait(reinterpret_cast<StreamId>(capturing), reinterpret_cast<StreamId>(other));
  EXPECT_EQ(cudaMemsetAsync(reinterpret_cast<void*>(*block), 1, 8 * kMiB, capturing), cudaSuccess);
  EXPECT_EQ(cudaMemsetAsync(reinterpret_cast<void*>(*base), 2, 2 * page, capturing), cudaSuccess);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(capturing, &graph), cudaSuccess) << "the capture was invalidated";
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  EXPECT_EQ(cudaGraphLaunch(exec, capturing), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(capturing), cudaSuccess);
  unsigned char first = 0;
  EXPECT_EQ(cudaMemcpy(&first, reinterpret_cast<void*>(*base), 1, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(first, 2);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  EXPECT_TRUE(device->free(*block));
  device->unmap(*base, 2 * page);
  device->release_address(*base, 4 * page);
  cudaStreamDestroy(capturing);
  cudaStreamDestroy(other);
}

TEST(CudaDevice, CapacityIsEnforcedWithoutCallingTheDriver) {
  SKIP_WITHOUT_GPU();
  auto device = make_device(8 * kMiB);
  const auto a = device->malloc(6 * kMiB);
  ASSERT_TRUE(a);
  const uint64_t ns = device->counters().device_call_ns;
  EXPECT_FALSE(device->malloc(4 * kMiB));
  const uint64_t page = device->granularity();
  const auto base = device->reserve_address(2 * page);
  ASSERT_TRUE(base);
  const uint64_t ns_after_reserve = device->counters().device_call_ns;
  EXPECT_FALSE(device->map(*base, 2 * page));
  EXPECT_EQ(device->counters().device_call_ns, ns_after_reserve) << "a capped map must not reach the driver";
  EXPECT_GT(ns_after_reserve, ns);
  EXPECT_EQ(device->counters().failed_calls, 2u);
  EXPECT_LE(device->free_memory(), 2 * kMiB);
  EXPECT_TRUE(device->free(*a));
  EXPECT_TRUE(device->map(*base, page));
  device->unmap(*base, page);
  device->release_address(*base, 2 * page);
}

TEST(CudaDevice, OneRealStreamPerTraceStream) {
  SKIP_WITHOUT_GPU();
  auto device = make_device();
  EXPECT_EQ(device->stream_for(0), cudaStreamLegacy);
  const cudaStream_t a = device->stream_for(0x7f00aa);
  const cudaStream_t b = device->stream_for(0x7f00bb);
  EXPECT_NE(a, b);
  EXPECT_EQ(device->stream_for(0x7f00aa), a);
  unsigned flags = 0;
  ASSERT_EQ(cudaStreamGetFlags(a, &flags), cudaSuccess);
  EXPECT_EQ(flags, unsigned{cudaStreamNonBlocking});
}

TEST(CudaDevice, PoolCountersAgreeWithTheDriver) {
  SKIP_WITHOUT_GPU();
  auto device = make_device();
  ASSERT_TRUE(device->configure_pool(PoolConfig{}));
  const auto a = device->pool_malloc_async(1000, 0);
  const auto b = device->pool_malloc_async(40 * kMiB, 0x7f00aa);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(cudaMemsetAsync(reinterpret_cast<void*>(*b), 3, 40 * kMiB, device->stream_for(0x7f00aa)), cudaSuccess);
  const DeviceCounters& c = device->counters();
  const CudaDevice::PoolAttributes pool = device->pool_attributes();
  RecordProperty("reserved_after_1000_and_40MiB", std::to_string(pool.reserved_current));
  EXPECT_EQ(c.pool_reserved_bytes, pool.reserved_current);
  EXPECT_EQ(c.pool_reserved_peak, pool.reserved_high);
  EXPECT_EQ(c.pool_used_bytes, pool.used_current) << "UsedMem counts the bytes asked for";
  EXPECT_EQ(c.pool_used_peak, pool.used_high);
  EXPECT_EQ(c.reserved_bytes, pool.reserved_current);
  EXPECT_GE(pool.reserved_current, 40 * kMiB + 1000);
  EXPECT_TRUE(device->pool_free_async(*a));
  EXPECT_TRUE(device->pool_free_async(*b));  // on its allocation stream, 0x7f00aa
  EXPECT_EQ(c.pool_used_bytes, 0u);
  // A second free of the same address is refused, with no driver call.
  const uint64_t frees = c.pool_free_calls;
  EXPECT_FALSE(device->pool_free_async(*b));
  EXPECT_EQ(c.pool_free_calls, frees);
  device->pool_trim(0);
  EXPECT_EQ(device->pool_attributes().reserved_current, 0u);
  EXPECT_EQ(c.reserved_bytes, 0u);
  EXPECT_EQ(c.pool_trim_calls, 1u);
}

TEST(CudaDevice, PoolStaysUnderTheCapacity) {
  SKIP_WITHOUT_GPU();
  const uint64_t cap = 64 * kMiB;
  auto device = make_device(cap);
  ASSERT_TRUE(device->configure_pool(PoolConfig{}));
  // Used bytes stay under the cap; whether each request fits is the pool's business, but what it
  // reserves must not pass the cap (the pool's maxSize), and a refusal is a result, not an error.
  std::vector<uint64_t> live;
  uint64_t refused = 0;
  for (const uint64_t mib : {30, 30, 3, 1, 2}) {
    if (const auto address = device->pool_malloc_async(mib * kMiB, 0))
      live.push_back(*address);
    else
      ++refused;
  }
  EXPECT_TRUE(device->pool_free_async(live.front()));
  live.erase(live.begin());
  if (const auto address = device->pool_malloc_async(33 * kMiB, 0))
    live.push_back(*address);
  else
    ++refused;
  RecordProperty("refused", std::to_string(refused));
  EXPECT_LE(device->pool_attributes().reserved_high, cap);
  EXPECT_LE(device->counters().reserved_peak, cap);
  // Used + request over the cap: refused before the driver is asked.
  const uint64_t ns = device->counters().device_call_ns;
  EXPECT_FALSE(device->pool_malloc_async(cap, 0));
  EXPECT_EQ(device->counters().device_call_ns, ns);
  EXPECT_EQ(device->counters().failed_calls, refused + 1);
  for (const uint64_t address : live) EXPECT_TRUE(device->pool_free_async(address));
}

// A whole replay of the bundled multistream trace (3 streams), on the GPU and on the simulator.
class CudaReplay : public ::testing::TestWithParam<std::string> {
 protected:
  static std::string trace() {
    static const std::string path = [] {
      // The repository root: where tests run from on the GPU machine, else the source tree.
      std::filesystem::path root = std::getenv("MEMREPLAY_REPO") ? std::getenv("MEMREPLAY_REPO") : MEMREPLAY_SOURCE_DIR;
      if (!std::filesystem::exists(root / "traces")) root = std::filesystem::current_path();
      const auto output = std::filesystem::temp_directory_path() / "memreplay-cuda-test-multistream.mrt";
      TraceWriter writer(output.string());
      import_file((root / "traces" / "multistream_pipeline.default.pickle.xz").string(), writer);
      return output.string();
    }();
    return path;
  }
  static ReplayMetrics replay(const std::string& policy, const std::string& device) {
    ReplayOptions request;
    request.trace_path = trace();
    request.policy_spec = policy;
    request.device_spec = device;
    return run_replay(request);
  }
};

TEST_P(CudaReplay, AgreesWithTheSimulatorAndLeavesNoMemoryBehind) {
  SKIP_WITHOUT_GPU();
  const std::string policy = GetParam();
  replay(policy, "cuda:0");  // warm-up: the runtime's one-time allocations stay out of the check
  const uint64_t free_before = gpu_free_bytes();
  const ReplayMetrics gpu = replay(policy, "cuda:0");
  const uint64_t free_after = gpu_free_bytes();
  const ReplayMetrics sim = replay(policy, "sim");
  EXPECT_EQ(free_after, free_before) << "the replay leaked GPU memory";
  EXPECT_FALSE(gpu.oom_at_event);
  EXPECT_EQ(gpu.requested_peak, sim.requested_peak);
  EXPECT_EQ(gpu.allocated_peak, sim.allocated_peak);
  RecordProperty("gpu_reserved_peak", std::to_string(gpu.reserved_peak));
  RecordProperty("sim_reserved_peak", std::to_string(sim.reserved_peak));
  if (policy.rfind("cuda_async", 0) == 0) {
    // The driver's pool is only modelled: same order of magnitude, whole 2 MiB pages at least.
    EXPECT_GE(gpu.reserved_peak, gpu.allocated_peak);
    EXPECT_NEAR(double(gpu.reserved_peak), double(sim.reserved_peak), 0.5 * double(sim.reserved_peak));
  } else {
    EXPECT_EQ(gpu.reserved_peak, sim.reserved_peak);
    EXPECT_EQ(gpu.device_alloc_calls, sim.device_alloc_calls);
    EXPECT_EQ(gpu.device_free_calls, sim.device_free_calls);
    for (const std::string key : {"malloc", "free", "reserve", "release", "map", "unmap", "failed"})
      EXPECT_EQ(gpu.device_counters.at(key), sim.device_counters.at(key)) << key;
  }
}

INSTANTIATE_TEST_SUITE_P(Policies, CudaReplay,
                         ::testing::Values("pytorch", "pytorch:expandable_segments:True",
                                           "pytorch:max_split_size_mb:64", "cuda_async"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           for (char& ch : name)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return name;
                         });

// Every trace of MEMREPLAY_GPU_TRACE_DIR (tools/gpu/check.sh sets it) replayed on the GPU: the
// device gives everything back, whatever the trace leaves live at its end.
TEST(CudaReplayTraces, EveryTraceLeavesNoMemoryBehind) {
  SKIP_WITHOUT_GPU();
  const char* dir = std::getenv("MEMREPLAY_GPU_TRACE_DIR");
  if (dir == nullptr) GTEST_SKIP() << "MEMREPLAY_GPU_TRACE_DIR is not set";
  std::vector<std::filesystem::path> traces;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    if (entry.path().extension() == ".mrt") traces.push_back(entry.path());
  std::sort(traces.begin(), traces.end());
  ASSERT_FALSE(traces.empty()) << "no .mrt in " << dir;
  for (const std::string policy : {"pytorch", "pytorch:expandable_segments:True", "cuda_async"}) {
    ReplayOptions request;
    request.policy_spec = policy;
    request.device_spec = "cuda:0";
    request.lenient = true;  // ring-buffer traces: the leak check is the point here
    request.trace_path = traces.front().string();
    run_replay(request);  // warm-up: one-time allocations of the runtime stay out of the check
    for (const auto& trace : traces) {
      request.trace_path = trace.string();
      const uint64_t before = gpu_free_bytes();
      run_replay(request);
      const uint64_t after = gpu_free_bytes();
      EXPECT_EQ(after, before) << trace.filename() << " with " << policy << ": "
                               << (double(before) - double(after)) / double(kMiB) << " MiB less free";
    }
  }
}

// Calibration probe for SimAsyncPool, run only when MEMREPLAY_POOL_PROBE_DIR is set: replays
// every trace of MEMREPLAY_GPU_TRACE_DIR through cuda_async on the real pool and writes, per
// trace, one line per allocate/free: "a SIZE STREAM OFFSET RESERVED" / "f OFFSET", where OFFSET
// is the address minus the pool's first one (hex) and RESERVED the pool's reserved bytes after.
TEST(CudaPoolProbe, WritesTheRealPoolsPlacements) {
  SKIP_WITHOUT_GPU();
  const char* out = std::getenv("MEMREPLAY_POOL_PROBE_DIR");
  const char* dir = std::getenv("MEMREPLAY_GPU_TRACE_DIR");
  if (out == nullptr || dir == nullptr) GTEST_SKIP() << "MEMREPLAY_POOL_PROBE_DIR / MEMREPLAY_GPU_TRACE_DIR not set";
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".mrt") continue;
    auto device = make_device();
    auto policy = PolicyRegistry::instance().create("cuda_async", *device);
    std::FILE* file = std::fopen((std::filesystem::path(out) / (entry.path().stem().string() + ".pool")).c_str(), "w");
    ASSERT_NE(file, nullptr);
    std::unordered_map<uint64_t, uint64_t> live;
    std::optional<uint64_t> base;
    for (const Event& e : TraceReader::read_all(entry.path().string())) {
      if (e.device != 0 || e.has_flag(kPreexisting)) continue;
      if (e.kind == EventKind::alloc && e.size != 0) {
        const auto block = policy->allocate(e.size, e.stream);
        if (!block) break;
        if (!base) base = block->address;
        live[e.address] = block->address;
        std::fprintf(file, "a %llu %llx %llx %llu\n", static_cast<unsigned long long>(e.size),
                     static_cast<unsigned long long>(e.stream), static_cast<unsigned long long>(block->address - *base),
                     static_cast<unsigned long long>(device->counters().pool_reserved_bytes));
      } else if (e.kind == EventKind::free_completed) {
        const auto it = live.find(e.address);
        if (it == live.end()) continue;
        std::fprintf(file, "f %llx\n", static_cast<unsigned long long>(it->second - *base));
        policy->free(it->second, e.stream);
        live.erase(it);
      } else if (e.kind == EventKind::empty_cache) {
        policy->empty_cache();
        std::fprintf(file, "e %llu\n", static_cast<unsigned long long>(device->counters().pool_reserved_bytes));
      }
    }
    std::fclose(file);
  }
}

#endif  // MEMREPLAY_HAVE_CUDA

}  // namespace
}  // namespace memreplay
