// The C entry points of memreplay_alloc.h over one LiveAllocator per process, made at the first
// allocation (on the device that allocation names) from the configured settings. The allocator and
// its trace are never destroyed: a job's last frees may come from static destructors after exit()
// began, and the recording library writes the trace's end at exit by itself.
#include "replayer/live/memreplay_alloc.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "policies/plugin/plugin_loader.h"
#include "policies/registry.h"
#include "replayer/live/live_allocator.h"
#include "replayer/live/live_trace.h"
#include "replayer/sim/sim_device.h"
#if MEMREPLAY_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "replayer/cuda/cuda_device.h"
#include "replayer/live/cuda_stream_order.h"
#endif

namespace memreplay {
namespace {

struct Settings {
  std::string policy = "memreplay";
  std::string device = "cuda";
  std::string trace;
  std::string record_library;
  std::optional<double> memory_fraction;
};

std::mutex g_setup_mutex;
Settings g_settings;
bool g_configured = false;
std::atomic<LiveAllocator*> g_allocator{nullptr};
int g_device = -1;  // the GPU the allocator serves: the device of the first allocation
LiveTrace* g_trace = nullptr;
thread_local std::string t_last_error;

void copy_out(const std::string& text, char* buffer, size_t size) {
  if (buffer == nullptr || size == 0) return;
  const size_t n = std::min(text.size(), size - 1);
  std::memcpy(buffer, text.data(), n);
  buffer[n] = '\0';
}

std::string environment(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}

// "PATH.so[:OPTIONS]" loads the plugin and names its policy; a registered name passes unchanged.
std::string resolve_plugin(const std::string& spec) {
  const size_t colon = spec.find(':');
  const std::string name = spec.substr(0, colon);
  const bool is_path = name.find('/') != std::string::npos || name.ends_with(".so");
  if (!is_path) return spec;
  const std::string registered = load_policy_plugin(name);
  return colon == std::string::npos ? registered : registered + spec.substr(colon);
}

// Settings checked before any GPU is touched: a bad spec or device is refused at configure time.
Settings checked(Settings settings) {
  static const bool environment_plugins_loaded = [] {
    load_plugins_from_environment();
    return true;
  }();
  (void)environment_plugins_loaded;
  settings.policy = resolve_plugin(settings.policy);
  if (settings.device != "cuda" && settings.device != "sim")
    throw std::runtime_error("device '" + settings.device + "': expected cuda or sim");
#if !MEMREPLAY_HAVE_CUDA
  if (settings.device == "cuda")
    throw std::runtime_error("this libmemreplay_alloc.so was built without CUDA: only device sim is available");
#endif
  SimDevice probe(SimDevice::Options{});
  (void)PolicyRegistry::instance().create(settings.policy, probe);  // throws PolicySpecError
  return settings;
}

void configure_from_environment_once() {
  if (g_configured) return;
  Settings settings;
  settings.policy = environment("MEMREPLAY_ALLOC_POLICY", settings.policy);
  settings.device = environment("MEMREPLAY_ALLOC_DEVICE", settings.device);
  settings.trace = environment("MEMREPLAY_ALLOC_TRACE", "");
  settings.record_library = environment("MEMREPLAY_RECORD_LIB", "");
  g_settings = checked(settings);
  g_configured = true;
}

struct MadeDevice {
  std::unique_ptr<Device> device;
  std::unique_ptr<StreamOrder> order;
  std::string name;
};

MadeDevice make_device(int index) {
  if (g_settings.device == "sim") {
    SimDevice::Options options;
    if (g_settings.memory_fraction)
      options.capacity = static_cast<uint64_t>(*g_settings.memory_fraction * static_cast<double>(options.total_memory));
    return {std::make_unique<SimDevice>(options), std::make_unique<HostOrder>(), "simulated"};
  }
#if MEMREPLAY_HAVE_CUDA
  CudaDevice::Options options{.index = index, .capacity = std::nullopt, .synchronize_before_unmap = true};
  if (g_settings.memory_fraction) {
    size_t free_bytes = 0, total_bytes = 0;
    if (cudaSetDevice(index) != cudaSuccess || cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess)
      throw std::runtime_error("cannot read the memory of CUDA device " + std::to_string(index));
    options.capacity = static_cast<uint64_t>(*g_settings.memory_fraction * static_cast<double>(total_bytes));
  }
  auto device = std::make_unique<CudaDevice>(options);
  std::string name = device->name();
  return {std::move(device), std::make_unique<CudaStreamOrder>(), name};
#else
  (void)index;
  throw std::runtime_error("built without CUDA");
#endif
}

// Our CUDA runtime (linked in, apart from the job's) has a current device per thread: the device's
// calls and events from autograd's threads must find the allocator's GPU current.
void make_current(int device) {
#if MEMREPLAY_HAVE_CUDA
  thread_local int current = -1;
  if (current == device || g_settings.device != "cuda") return;
  if (cudaSetDevice(device) != cudaSuccess)
    throw std::runtime_error("cannot make CUDA device " + std::to_string(device) + " current");
  current = device;
#else
  (void)device;
#endif
}

LiveAllocator& serving(LiveAllocator& allocator, int device) {
  if (device != g_device)
    throw std::runtime_error("the memreplay live allocator serves one GPU per process (device " +
                             std::to_string(g_device) + "); an allocation on device " + std::to_string(device) +
                             " is not supported");
  make_current(device);
  return allocator;
}

// The process's allocator, made on the first call that needs it.
LiveAllocator& allocator_for(int device) {
  if (LiveAllocator* made = g_allocator.load(std::memory_order_acquire)) return serving(*made, device);
  const std::lock_guard lock(g_setup_mutex);
  if (LiveAllocator* made = g_allocator.load(std::memory_order_relaxed)) return serving(*made, device);
  configure_from_environment_once();
  MadeDevice made = make_device(device);
  if (!g_settings.trace.empty()) {
    if (g_settings.record_library.empty())
      throw std::runtime_error("a trace was asked for (" + g_settings.trace +
                               ") but no recording library: set MEMREPLAY_RECORD_LIB to libmemreplay_record.so");
    g_trace = new LiveTrace(g_settings.trace, g_settings.record_library,
                            LiveTraceHeader{g_settings.policy, static_cast<uint32_t>(device),
                                            made.device->total_memory(), made.name, made.device->capacity()});
  }
  auto* allocator = new LiveAllocator(std::move(made.device), g_settings.policy, std::move(made.order), g_trace);
  g_device = device;
  g_allocator.store(allocator, std::memory_order_release);
  make_current(device);
  return *allocator;
}

// A JSON string of `text` (a policy spec: printable, but it may hold quotes or backslashes).
std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out + "\"";
}

StreamId stream_id(void* stream) { return static_cast<StreamId>(reinterpret_cast<uintptr_t>(stream)); }
void* as_pointer(uint64_t address) { return reinterpret_cast<void*>(static_cast<uintptr_t>(address)); }

template <class Call>
auto guarded(Call call, decltype(call()) on_error) noexcept -> decltype(call()) {
  try {
    return call();
  } catch (const std::exception& e) {
    t_last_error = e.what();
  } catch (...) {
    t_last_error = "unknown error";
  }
  return on_error;
}

void* malloc_in(ssize_t size, int device, void* stream, uint32_t pool) {
  return guarded(
      [&]() -> void* {
        t_last_error.clear();
        if (size == 0) return nullptr;  // an empty tensor: no memory, as PyTorch's own allocator
        if (size < 0) throw std::runtime_error("allocation of " + std::to_string(size) + " bytes");
        if (pool > UINT16_MAX) throw std::runtime_error("pool " + std::to_string(pool) + " is above 65535");
        LiveAllocator& allocator = allocator_for(device);
        const auto address =
            allocator.allocate(static_cast<uint64_t>(size), stream_id(stream), static_cast<PoolId>(pool));
        if (!address) {
          t_last_error = allocator.oom_message();
          return nullptr;
        }
        return as_pointer(*address);
      },
      nullptr);
}

}  // namespace
}  // namespace memreplay

using namespace memreplay;

extern "C" {

int memreplay_alloc_configure(const char* policy_spec, const char* device_spec, const char* trace_path,
                              const char* record_library, char* error, size_t error_size) {
  const std::lock_guard lock(g_setup_mutex);
  try {
    if (LiveAllocator* made = g_allocator.load(); made != nullptr && made->used())
      throw std::runtime_error("the live allocator is already serving allocations (policy " + made->policy_spec() +
                               "): configure it before the first CUDA allocation");
    if (g_allocator.load() != nullptr) throw std::runtime_error("the live allocator is already running");
    Settings settings;
    settings.policy = policy_spec != nullptr && *policy_spec ? policy_spec : settings.policy;
    settings.device = device_spec != nullptr && *device_spec ? device_spec : settings.device;
    settings.trace = trace_path != nullptr ? trace_path : "";
    settings.record_library = record_library != nullptr ? record_library : "";
    settings.memory_fraction = g_settings.memory_fraction;
    g_settings = checked(settings);
    g_configured = true;
    return 0;
  } catch (const std::exception& e) {
    copy_out(e.what(), error, error_size);
    return -1;
  }
}

void* memreplay_alloc_malloc(ssize_t size, int device, void* stream) { return malloc_in(size, device, stream, 0); }

void* memreplay_alloc_malloc_in_pool(ssize_t size, int device, void* stream, uint32_t pool) {
  return malloc_in(size, device, stream, pool);
}

void memreplay_alloc_free(void* ptr, ssize_t, int, void*) {
  LiveAllocator* allocator = g_allocator.load(std::memory_order_acquire);
  if (ptr == nullptr || allocator == nullptr) return;
  guarded(
      [&] {
        make_current(g_device);
        if (!allocator->free(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(ptr)))) {
          t_last_error = "free of an address the live allocator did not hand out";
          std::fprintf(stderr, "memreplay: %s (%p): ignored\n", t_last_error.c_str(), ptr);
        }
        return 0;
      },
      0);
}

void memreplay_alloc_release_pool(uint32_t pool) {
  if (LiveAllocator* allocator = g_allocator.load(); allocator != nullptr && pool <= UINT16_MAX)
    guarded([&] { return allocator->release_pool(static_cast<PoolId>(pool)), 0; }, 0);
}

void memreplay_alloc_name_pool(uint32_t pool, uint64_t torch_id_first, uint64_t torch_id_second, const char* kind) {
  if (LiveAllocator* allocator = g_allocator.load(); allocator != nullptr && pool >= 1 && pool <= UINT16_MAX)
    guarded(
        [&] {
          return allocator->name_pool(static_cast<PoolId>(pool), {torch_id_first, torch_id_second},
                                      kind == nullptr ? "" : kind),
                 0;
        },
        0);
}

int memreplay_alloc_record_stream(void* ptr, void* stream) {
  LiveAllocator* allocator = g_allocator.load(std::memory_order_acquire);
  if (allocator == nullptr) return 0;
  return guarded([&] { return allocator->record_stream(reinterpret_cast<uintptr_t>(ptr), stream_id(stream)) ? 1 : 0; },
                 0);
}

void memreplay_alloc_empty_cache(void) {
  if (LiveAllocator* allocator = g_allocator.load(); allocator != nullptr)
    guarded([&] { return make_current(g_device), allocator->empty_cache(), 0; }, 0);
}

int memreplay_alloc_set_memory_fraction(double fraction, int) {
  const std::lock_guard lock(g_setup_mutex);
  if (!(fraction > 0.0 && fraction <= 1.0)) {
    t_last_error = "memory fraction " + std::to_string(fraction) + " is not in (0, 1]";
    return -1;
  }
  if (g_allocator.load() != nullptr) {
    t_last_error = "the memory fraction can be set only before the first CUDA allocation under a memreplay policy";
    return -1;
  }
  g_settings.memory_fraction = fraction;
  return 0;
}

size_t memreplay_alloc_last_error(char* buffer, size_t size) {
  copy_out(t_last_error, buffer, size);
  return t_last_error.size();
}

size_t memreplay_alloc_stats(char* buffer, size_t size) {
  std::string json = "{";
  if (LiveAllocator* allocator = g_allocator.load(); allocator != nullptr) {
    json += "\"policy\": " + json_string(allocator->policy_spec());
    for (const auto& [name, value] : allocator->stats()) json += ", \"" + name + "\": " + std::to_string(value);
  }
  json += "}";
  copy_out(json, buffer, size);
  return json.size();
}

int memreplay_alloc_finish_trace(void) {
  const std::lock_guard lock(g_setup_mutex);
  return g_trace != nullptr && g_trace->close() ? 1 : 0;
}

}  // extern "C"
