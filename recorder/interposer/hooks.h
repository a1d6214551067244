// The CUDA interposer (libmemreplay_interposer.so, loaded with LD_PRELOAD by `memreplay record`):
// the functions it wraps, how each wrapper finds the real function, and how calls are recorded.
//
// How calls reach the wrappers:
//   1. exported names: a program or library linked against libcudart.so / libcuda.so calls
//      cudaMalloc, cuMemAlloc_v2, ... through its PLT, and LD_PRELOAD puts ours first;
//   2. cuGetProcAddress (and _v2): CUDA 12+ runtimes, static ones included, fetch every driver
//      function through it; ours returns our wrapper for the symbols we hook (proc_address.cpp);
//      cudaGetDriverEntryPoint[ByVersion] likewise;
//   3. dlsym on a library handle: runtimes find cuGetProcAddress with dlsym(libcuda, ...), which a
//      PLT interposer never sees; ours hands back our wrappers (dlsym_hook.cpp, x86-64).
// A runtime call that the driver serves through our driver wrappers is recorded once, as the
// runtime call: a thread-local depth counter mutes the nested driver calls (CallScope).
//
// What becomes what (proto/event.h):
//   cudaMalloc, cudaMallocManaged, cuMemAlloc, cuMemAllocManaged    segment_alloc  address, size
//   cudaFree, cuMemFree                                             segment_free   address (size from the alloc)
//   cudaMallocAsync, cudaMallocFromPoolAsync, cuMemAlloc[FromPool]Async  alloc     stream, address, size
//   cudaFreeAsync, cuMemFreeAsync                                   free_completed stream, address
//   cuMemAddressReserve / cuMemAddressFree                          address_reserve / address_free
//   cuMemCreate / cuMemRelease                                      physical_alloc / physical_free (aux = handle)
//   cuMemMap / cuMemUnmap                                           segment_map (aux = handle) / segment_unmap
//   cuda/cuStreamCreate*, *StreamDestroy                            stream_create / stream_destroy
//   *EventRecord*, *StreamWaitEvent                                 event_record / stream_wait_event (aux = event)
//   *StreamSynchronize, *EventSynchronize, cudaDeviceSynchronize, cuCtxSynchronize   synchronize
// With MEMREPLAY_MALLOC_EVENTS=alloc, cudaMalloc/cuMemAlloc/cudaFree/cuMemFree and cuMemMap/cuMemUnmap
// become alloc / free_completed instead: the program's own requests, replayable against allocator
// policies (a map's size is the mapped size, a multiple of the granularity).
// A call that failed is kept with flag kFailed and its return code in aux. Every event's stack is
// [the API called, the caller (library + symbol), the thread ("thread TID (name)")].
// Not interposed (yet): pitched/array/3D allocations (cudaMallocPitch, cudaMalloc3D, cuMemAllocPitch,
// arrays), pinned host memory, CUDA-graph memory nodes, memory-pool creation and trimming. The
// dlsym path is x86-64 only; elsewhere runtimes that reach the driver through dlsym are recorded
// at the runtime level only.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>

#include "proto/event.h"

// The wrappers' own symbols: what the program's calls resolve to.
#define MEMREPLAY_EXPORT extern "C" __attribute__((visibility("default")))

namespace memreplay::interposer {

enum class Library : uint8_t { runtime, driver };

// Every exported symbol we wrap: name, library.
// clang-format off
#define MEMREPLAY_INTERPOSED(X)                                                                  \
  X(cudaMalloc, runtime) X(cudaFree, runtime) X(cudaMallocManaged, runtime)                      \
  X(cudaMallocAsync, runtime) X(cudaMallocAsync_ptsz, runtime) X(cudaFreeAsync, runtime)         \
  X(cudaFreeAsync_ptsz, runtime) X(cudaMallocFromPoolAsync, runtime)                             \
  X(cudaMallocFromPoolAsync_ptsz, runtime) X(cudaStreamCreate, runtime)                          \
  X(cudaStreamCreateWithFlags, runtime) X(cudaStreamCreateWithPriority, runtime)                 \
  X(cudaStreamDestroy, runtime) X(cudaEventRecord, runtime) X(cudaEventRecord_ptsz, runtime)     \
  X(cudaEventRecordWithFlags, runtime) X(cudaEventRecordWithFlags_ptsz, runtime)                 \
  X(cudaStreamWaitEvent, runtime) X(cudaStreamWaitEvent_ptsz, runtime)                           \
  X(cudaStreamSynchronize, runtime) X(cudaStreamSynchronize_ptsz, runtime)                       \
  X(cudaEventSynchronize, runtime) X(cudaDeviceSynchronize, runtime)                             \
  X(cudaGetDriverEntryPoint, runtime) X(cudaGetDriverEntryPoint_ptsz, runtime)                   \
  X(cudaGetDriverEntryPointByVersion, runtime) X(cudaGetDriverEntryPointByVersion_ptsz, runtime) \
  X(cuMemAlloc_v2, driver) X(cuMemFree_v2, driver) X(cuMemAllocManaged, driver)                  \
  X(cuMemAllocAsync, driver) X(cuMemAllocAsync_ptsz, driver) X(cuMemFreeAsync, driver)           \
  X(cuMemFreeAsync_ptsz, driver) X(cuMemAllocFromPoolAsync, driver)                              \
  X(cuMemAllocFromPoolAsync_ptsz, driver) X(cuMemCreate, driver) X(cuMemRelease, driver)         \
  X(cuMemMap, driver) X(cuMemUnmap, driver) X(cuMemAddressReserve, driver)                       \
  X(cuMemAddressFree, driver) X(cuStreamCreate, driver) X(cuStreamCreateWithPriority, driver)    \
  X(cuStreamDestroy_v2, driver) X(cuEventRecord, driver) X(cuEventRecord_ptsz, driver)           \
  X(cuEventRecordWithFlags, driver) X(cuEventRecordWithFlags_ptsz, driver)                       \
  X(cuStreamWaitEvent, driver) X(cuStreamWaitEvent_ptsz, driver) X(cuStreamSynchronize, driver)  \
  X(cuStreamSynchronize_ptsz, driver) X(cuEventSynchronize, driver) X(cuCtxSynchronize, driver)  \
  X(cuCtxSynchronize_v2, driver) X(cuGetProcAddress, driver) X(cuGetProcAddress_v2, driver)
// clang-format on

enum class Api : uint16_t {
#define MEMREPLAY_API_ENUM(name, lib) name,
  MEMREPLAY_INTERPOSED(MEMREPLAY_API_ENUM)
#undef MEMREPLAY_API_ENUM
      count
};
inline constexpr size_t kApiCount = static_cast<size_t>(Api::count);

struct ApiInfo {
  const char* symbol;
  Library library;
  void* wrapper;  // our exported function of that name
};
const ApiInfo& api_info(Api api);
std::optional<Api> api_by_symbol(std::string_view symbol);
// Api of one of our wrappers (a pointer we handed out), if it is one.
std::optional<Api> api_by_wrapper(const void* fn);

// The real function behind our wrapper, found on first use: driver functions in libcuda.so.1,
// runtime functions after us in the search order or, for a runtime loaded RTLD_LOCAL, in the
// calling library's own dependencies. nullptr when there is none.
void* real_function(Api api, const void* caller);
// Where a lookup (cuGetProcAddress, dlsym) already found the real function: the first one wins.
void remember_real_function(Api api, void* real);

template <typename Fn>
Fn real(Api api, const void* caller) {
  return reinterpret_cast<Fn>(real_function(api, caller));
}

// libc's dlsym (never our wrapper), and the driver library's handle (nullptr if not loaded).
void* real_dlsym(void* handle, const char* symbol);
void* real_dlsym_address();
void* libcuda_handle();

// Nesting guard: only the outermost interposed call on a thread is recorded.
class CallScope {
 public:
  CallScope() noexcept { ++depth_; }
  ~CallScope() { --depth_; }
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;
  bool outermost() const noexcept { return depth_ == 1; }

 private:
  static thread_local int depth_;
};

// One call as an event (interposer_recorder.cpp): what the wrapper saw, then (filled in by
// intercept()) which API, its return code (0 = success) and the caller's return address.
struct Call {
  EventKind kind;
  uint64_t stream = 0;
  uint64_t address = 0;
  uint64_t size = 0;
  uint64_t aux = 0;
  Api api{};
  int rc = 0;
  const void* caller = nullptr;
};
void record_call(const Call& call) noexcept;

// The body of every recording wrapper: the real function (`no_real_function` is returned when
// there is none) runs inside a CallScope; if this was the outermost interposed call on the
// thread, the Call that describe(rc) makes of it is recorded (std::nullopt: nothing to record).
template <typename Fn, typename Result, typename Describe, typename... Args>
Result intercept(Api api, const void* caller, Result no_real_function, Describe describe, Args... args) {
  const Fn real_fn = real<Fn>(api, caller);
  if (real_fn == nullptr) return no_real_function;
  CallScope scope;
  const Result rc = real_fn(args...);
  if (scope.outermost()) {
    if (std::optional<Call> call = describe(rc)) {
      call->api = api;
      call->rc = static_cast<int>(rc);
      call->caller = caller;
      record_call(*call);
    }
  }
  return rc;
}

inline uint64_t u64(const void* p) noexcept { return reinterpret_cast<uint64_t>(p); }

// What a call that succeeded wrote through `out` (an address, a handle, a stream), else 0.
template <typename Result, typename T>
uint64_t produced(Result rc, const T* out) noexcept {
  if (static_cast<int>(rc) != 0 || out == nullptr) return 0;
  if constexpr (std::is_pointer_v<T>)
    return u64(*out);
  else
    return static_cast<uint64_t>(*out);
}

// describe functions for intercept(), by what the event needs of the call's result:
// an event that does not depend on it;
inline auto event(const Call& call) noexcept {
  return [call](auto) { return call; };
}
// a free: nothing for a null pointer, which frees nothing (cudaFree(nullptr) is the classic way
// to create the context);
inline auto free_event(const Call& call) noexcept {
  return [call](auto) { return call.address != 0 ? std::optional<Call>(call) : std::nullopt; };
}
// an allocation (or reservation): the address it wrote through `out`.
template <typename T>
auto allocation_event(EventKind kind, uint64_t stream, const T* out, uint64_t size) noexcept {
  return [=](auto rc) { return Call{kind, stream, produced(rc, out), size}; };
}
// a stream created: the stream it wrote through `out`.
template <typename T>
auto stream_created_event(const T* out) noexcept {
  return [=](auto rc) { return Call{EventKind::stream_create, produced(rc, out)}; };
}
// physical memory created: the handle it wrote through `out`, as aux (segment_map names it so).
template <typename T>
auto physical_alloc_event(const T* out, uint64_t size) noexcept {
  return [=](auto rc) { return Call{EventKind::physical_alloc, 0, 0, size, produced(rc, out)}; };
}

// Defines the exported wrapper `name params` as intercept() of the real function with `args` (in
// parentheses) and `describe` (an expression of the parameters). Result is the library's status
// type, no_real the status for "not initialized".
#define MEMREPLAY_WRAPPER(Result, no_real, name, params, args, describe)                                              \
  MEMREPLAY_EXPORT Result name params {                                                                               \
    return ::memreplay::interposer::intercept<decltype(&name)>(                                                       \
        ::memreplay::interposer::Api::name, __builtin_return_address(0), no_real, describe MEMREPLAY_MORE_ARGS args); \
  }
#define MEMREPLAY_MORE_ARGS(...) __VA_OPT__(, ) __VA_ARGS__

// The same for `name` and its _ptsz twin (the same call on the per-thread default stream).
#define MEMREPLAY_WRAPPER_TWINS(Result, no_real, name, params, args, describe) \
  MEMREPLAY_WRAPPER(Result, no_real, name, params, args, describe)             \
  MEMREPLAY_WRAPPER(Result, no_real, name##_ptsz, params, args, describe)

// cudaMalloc-family calls as alloc/free_completed rather than segment_* (MEMREPLAY_MALLOC_EVENTS).
bool mallocs_as_allocs() noexcept;
inline EventKind malloc_kind() noexcept { return mallocs_as_allocs() ? EventKind::alloc : EventKind::segment_alloc; }
inline EventKind free_kind() noexcept {
  return mallocs_as_allocs() ? EventKind::free_completed : EventKind::segment_free;
}
// cuMemMap/cuMemUnmap likewise: an allocator that maps each buffer (JAX's platform allocator:
// cuMemCreate + cuMemMap per array) makes its buffers' maps the program's allocations. CUDA
// unmaps only whole mapped ranges, so an unmap frees exactly the one map at its address.
inline Call map_call(uint64_t address, uint64_t size, uint64_t handle) noexcept {
  if (mallocs_as_allocs()) return Call{EventKind::alloc, 0, address, size};
  return Call{EventKind::segment_map, 0, address, size, handle};
}
inline Call unmap_call(uint64_t address, uint64_t size) noexcept {
  return Call{mallocs_as_allocs() ? EventKind::free_completed : EventKind::segment_unmap, 0, address, size};
}

}  // namespace memreplay::interposer
