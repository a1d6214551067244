// Wrappers of the CUDA runtime API (libcudart.so). Each intercept()'s CallScope (hooks.h) keeps
// the driver calls the runtime makes for it from being recorded a second time. One line a
// wrapper: its name, parameters, the arguments it passes to the real function, and the event the
// call becomes; TWINS adds the _ptsz twin (the same call on the per-thread default stream).
// Without a real runtime, calls fail with cudaErrorInitializationError.
#include "recorder/interposer/cuda_declarations.h"
#include "recorder/interposer/hooks.h"
#include "recorder/interposer/proc_address.h"

namespace mi = memreplay::interposer;
using memreplay::EventKind;
using mi::Api;
using mi::u64;

#define WRAP(...) MEMREPLAY_WRAPPER(cudaError_t, cudaErrorInitializationError, __VA_ARGS__)
#define TWINS(...) MEMREPLAY_WRAPPER_TWINS(cudaError_t, cudaErrorInitializationError, __VA_ARGS__)

// --- allocation ---

WRAP(cudaMalloc, (void** ptr, size_t size), (ptr, size), mi::allocation_event(mi::malloc_kind(), 0, ptr, size))
WRAP(cudaMallocManaged, (void** ptr, size_t size, unsigned int flags), (ptr, size, flags),
     mi::allocation_event(mi::malloc_kind(), 0, ptr, size))
WRAP(cudaFree, (void* ptr), (ptr), mi::free_event({mi::free_kind(), 0, u64(ptr)}))
TWINS(cudaMallocAsync, (void** ptr, size_t size, cudaStream_t stream), (ptr, size, stream),
      mi::allocation_event(EventKind::alloc, u64(stream), ptr, size))
TWINS(cudaMallocFromPoolAsync, (void** ptr, size_t size, cudaMemPool_t pool, cudaStream_t stream),
      (ptr, size, pool, stream), mi::allocation_event(EventKind::alloc, u64(stream), ptr, size))
TWINS(cudaFreeAsync, (void* ptr, cudaStream_t stream), (ptr, stream),
      mi::free_event({EventKind::free_completed, u64(stream), u64(ptr)}))

// --- streams, events, synchronization ---

WRAP(cudaStreamCreate, (cudaStream_t * stream), (stream), mi::stream_created_event(stream))
WRAP(cudaStreamCreateWithFlags, (cudaStream_t * stream, unsigned int flags), (stream, flags),
     mi::stream_created_event(stream))
WRAP(cudaStreamCreateWithPriority, (cudaStream_t * stream, unsigned int flags, int priority), (stream, flags, priority),
     mi::stream_created_event(stream))
WRAP(cudaStreamDestroy, (cudaStream_t stream), (stream), mi::event({EventKind::stream_destroy, u64(stream)}))
TWINS(cudaEventRecord, (cudaEvent_t event, cudaStream_t stream), (event, stream),
      mi::event({EventKind::event_record, u64(stream), 0, 0, u64(event)}))
TWINS(cudaEventRecordWithFlags, (cudaEvent_t event, cudaStream_t stream, unsigned int flags), (event, stream, flags),
      mi::event({EventKind::event_record, u64(stream), 0, 0, u64(event)}))
TWINS(cudaStreamWaitEvent, (cudaStream_t stream, cudaEvent_t event, unsigned int flags), (stream, event, flags),
      mi::event({EventKind::stream_wait_event, u64(stream), 0, 0, u64(event)}))
TWINS(cudaStreamSynchronize, (cudaStream_t stream), (stream), mi::event({EventKind::synchronize, u64(stream)}))
WRAP(cudaEventSynchronize, (cudaEvent_t event), (event), mi::event({EventKind::synchronize, 0, 0, 0, u64(event)}))
WRAP(cudaDeviceSynchronize, (), (), mi::event({EventKind::synchronize}))

// --- driver entry points handed out by the runtime ---

namespace {

// cudaGetDriverEntryPoint*: the real function called with (symbol, fn, args...), then our wrapper
// handed out instead of the driver function for the symbols we wrap. version and flags are the
// lookup's, for wrap_driver_entry (version -1: the variants that take none).
template <typename Fn, typename... Args>
cudaError_t look_up_entry(Api api, const void* caller, const char* symbol, void** fn, int version,
                          unsigned long long flags, Args... args) {
  const auto real_fn = mi::real<Fn>(api, caller);
  if (real_fn == nullptr) return cudaErrorInitializationError;
  const cudaError_t rc = real_fn(symbol, fn, args...);
  if (rc == cudaSuccess && fn != nullptr) *fn = mi::wrap_driver_entry(symbol, version, flags, *fn);
  return rc;
}

}  // namespace

#define MEMREPLAY_GET_DRIVER_ENTRY_POINT(name)                                                                  \
  MEMREPLAY_EXPORT cudaError_t name(const char* symbol, void** fn, unsigned long long flags,                    \
                                    cudaDriverEntryPointQueryResult* status) {                                  \
    return look_up_entry<decltype(&name)>(Api::name, __builtin_return_address(0), symbol, fn, -1, flags, flags, \
                                          status);                                                              \
  }
MEMREPLAY_GET_DRIVER_ENTRY_POINT(cudaGetDriverEntryPoint)
MEMREPLAY_GET_DRIVER_ENTRY_POINT(cudaGetDriverEntryPoint_ptsz)

#define MEMREPLAY_GET_DRIVER_ENTRY_POINT_BY_VERSION(name)                                                          \
  MEMREPLAY_EXPORT cudaError_t name(const char* symbol, void** fn, unsigned int version, unsigned long long flags, \
                                    cudaDriverEntryPointQueryResult* status) {                                     \
    return look_up_entry<decltype(&name)>(Api::name, __builtin_return_address(0), symbol, fn,                      \
                                          static_cast<int>(version), flags, version, flags, status);               \
  }
MEMREPLAY_GET_DRIVER_ENTRY_POINT_BY_VERSION(cudaGetDriverEntryPointByVersion)
MEMREPLAY_GET_DRIVER_ENTRY_POINT_BY_VERSION(cudaGetDriverEntryPointByVersion_ptsz)
