// memreplay's live allocator inside PyTorch, the native half: a CUDAPluggableAllocator whose alloc
// and free are libmemreplay_alloc.so's (replayer/live/memreplay_alloc.h), with the hooks that only
// C++ can set: record_stream, empty_cache (the allocator's reset), the memory fraction, the private
// pools of CUDA graphs and MemPools (begin/end allocate to pool, release), and an out-of-memory that
// raises torch.OutOfMemoryError with the policy's numbers instead of handing torch a null pointer.
//
// Built against the user's torch by torch.utils.cpp_extension (see _native.py); the allocator
// library is loaded with dlopen, so this extension carries no memreplay code of its own.
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/util/Exception.h>
#include <dlfcn.h>
#include <pybind11/pybind11.h>
#include <torch/csrc/cuda/CUDAPluggableAllocator.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "memreplay_alloc.h"
#include "pool_kind.h"

namespace py = pybind11;

namespace {

struct AllocLibrary {
  decltype(&memreplay_alloc_malloc) malloc = nullptr;
  decltype(&memreplay_alloc_malloc_in_pool) malloc_in_pool = nullptr;
  decltype(&memreplay_alloc_free) free = nullptr;
  decltype(&memreplay_alloc_record_stream) record_stream = nullptr;
  decltype(&memreplay_alloc_empty_cache) empty_cache = nullptr;
  decltype(&memreplay_alloc_set_memory_fraction) set_memory_fraction = nullptr;
  decltype(&memreplay_alloc_release_pool) release_pool = nullptr;
  decltype(&memreplay_alloc_name_pool) name_pool = nullptr;
  decltype(&memreplay_alloc_last_error) last_error = nullptr;
};
AllocLibrary g_lib;
std::shared_ptr<c10::cuda::CUDACachingAllocator::CUDAAllocator> g_installed;

std::string last_error() {
  char text[2048] = {};
  g_lib.last_error(text, sizeof text);
  return text;
}

// Private pools: PyTorch's MempoolId_t numbered 1, 2, ... for the policy, and the pools that
// allocations go to while a graph capture or a use_mem_pool block runs.
struct ActivePool {
  int device;
  uint32_t id;
  c10::cuda::MempoolId_t mempool;
  std::function<bool(cudaStream_t)> filter;
};
std::mutex g_pool_mutex;
std::map<c10::cuda::MempoolId_t, uint32_t> g_pool_ids;
// Captures into each pool not yet released: graphs may share a pool (pool=other.pool()), and each
// graph's destruction releases it once, as PyTorch's own allocator counts a pool's uses.
std::map<c10::cuda::MempoolId_t, uint32_t> g_pool_uses;
std::vector<ActivePool> g_active_pools;
std::atomic<size_t> g_active_count{0};  // g_active_pools.size(), read without the lock

// A pool's id, numbered in the order pools first appear; a new one is named in the run's trace
// as the PyTorch tracker names pools (pool_kind.h).
uint32_t pool_id(c10::cuda::MempoolId_t mempool) {
  const auto [it, inserted] = g_pool_ids.try_emplace(mempool, static_cast<uint32_t>(g_pool_ids.size() + 1));
  if (inserted) g_lib.name_pool(it->second, mempool.first, mempool.second, memreplay_torch::pool_kind(mempool.second));
  return it->second;
}

uint32_t pool_for(int device, cudaStream_t stream) {
  const std::lock_guard lock(g_pool_mutex);
  for (auto it = g_active_pools.rbegin(); it != g_active_pools.rend(); ++it)
    if (it->device == device && (!it->filter || it->filter(stream))) return it->id;
  return 0;
}

void* allocate(size_t size, int device, cudaStream_t stream) {
  // An empty tensor: torch's own allocator hands out no memory for it either.
  if (size == 0) return nullptr;
  const uint32_t pool = g_active_count.load(std::memory_order_acquire) == 0 ? 0 : pool_for(device, stream);
  const auto bytes = static_cast<ssize_t>(size);
  void* pointer = pool == 0 ? g_lib.malloc(bytes, device, stream) : g_lib.malloc_in_pool(bytes, device, stream, pool);
  if (pointer != nullptr) return pointer;
  const std::string message = last_error();
  if (message.rfind("CUDA out of memory", 0) == 0) TORCH_CHECK_WITH(OutOfMemoryError, false, message);
  TORCH_CHECK(false, "memreplay live allocator: ", message.empty() ? "no memory and no reason given" : message);
}

void release(void* pointer, size_t size, int device, cudaStream_t stream) {
  g_lib.free(pointer, static_cast<ssize_t>(size), device, stream);
}

template <class F>
void find(void* library, const std::string& path, F& function, const char* name) {
  function = reinterpret_cast<F>(dlsym(library, name));
  if (function == nullptr) throw std::runtime_error(path + " lacks " + name + " (a library of another memreplay?)");
}

void load(const std::string& path) {
  if (g_lib.malloc != nullptr) return;
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) throw std::runtime_error("cannot load " + path + ": " + dlerror());
  AllocLibrary lib;
  find(library, path, lib.malloc, "memreplay_alloc_malloc");
  find(library, path, lib.malloc_in_pool, "memreplay_alloc_malloc_in_pool");
  find(library, path, lib.free, "memreplay_alloc_free");
  find(library, path, lib.record_stream, "memreplay_alloc_record_stream");
  find(library, path, lib.empty_cache, "memreplay_alloc_empty_cache");
  find(library, path, lib.set_memory_fraction, "memreplay_alloc_set_memory_fraction");
  find(library, path, lib.release_pool, "memreplay_alloc_release_pool");
  find(library, path, lib.name_pool, "memreplay_alloc_name_pool");
  find(library, path, lib.last_error, "memreplay_alloc_last_error");
  g_lib = lib;
}

// Makes the policy PyTorch's CUDA allocator. The library must be configured already
// (memreplay_alloc_configure, from Python through ctypes).
void install(const std::string& library_path) {
  namespace pluggable = torch::cuda::CUDAPluggableAllocator;
  if (g_installed) return;
  load(library_path);
  auto allocator = std::dynamic_pointer_cast<pluggable::CUDAPluggableAllocator>(
      pluggable::createCustomAllocator(&allocate, &release));
  TORCH_CHECK(allocator != nullptr, "torch's createCustomAllocator did not make a CUDAPluggableAllocator");
  allocator->set_record_stream_fn([](void* pointer, cudaStream_t stream) { g_lib.record_stream(pointer, stream); });
  allocator->set_reset_fn([] { g_lib.empty_cache(); });
  allocator->set_memory_fraction_fn([](double fraction, int device) {
    TORCH_CHECK(g_lib.set_memory_fraction(fraction, device) == 0, "memreplay live allocator: ", last_error());
  });
  allocator->set_begin_allocate_to_pool(
      [](int device, c10::cuda::MempoolId_t mempool, std::function<bool(cudaStream_t)> filter) {
        const std::lock_guard lock(g_pool_mutex);
        ++g_pool_uses[mempool];
        g_active_pools.push_back(ActivePool{device, pool_id(mempool), mempool, std::move(filter)});
        g_active_count.store(g_active_pools.size(), std::memory_order_release);
      });
  allocator->set_end_allocate_to_pool_fn([](int device, c10::cuda::MempoolId_t mempool) {
    const std::lock_guard lock(g_pool_mutex);
    for (auto it = g_active_pools.rbegin(); it != g_active_pools.rend(); ++it)
      if (it->device == device && it->mempool == mempool) {
        g_active_pools.erase(std::next(it).base());
        g_active_count.store(g_active_pools.size(), std::memory_order_release);
        break;
      }
  });
  allocator->set_release_pool([](int, c10::cuda::MempoolId_t mempool) {
    uint32_t id = 0;
    {
      const std::lock_guard lock(g_pool_mutex);
      const auto it = g_pool_ids.find(mempool);
      if (it == g_pool_ids.end()) return;
      const auto uses = g_pool_uses.find(mempool);
      if (uses != g_pool_uses.end() && uses->second > 1) {  // another graph still uses the pool
        --uses->second;
        return;
      }
      if (uses != g_pool_uses.end()) g_pool_uses.erase(uses);
      id = it->second;
    }
    g_lib.release_pool(id);
  });
  pluggable::changeCurrentAllocator(allocator);
  g_installed = allocator;
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, module) {
  module.doc() = "memreplay's live allocator for PyTorch (libmemreplay_alloc.so behind CUDAPluggableAllocator)";
  module.def("install", &install, py::arg("library_path"),
             "Makes the configured memreplay policy torch's CUDA allocator (before CUDA is first used).");
  module.def("installed", [] { return g_installed != nullptr; });
}
