// Wrappers of the CUDA runtime API (libcudart.so). Each is one intercept() (hooks.h), whose
// CallScope keeps the driver calls the runtime makes for it from being recorded a second time,
// and the event its call becomes; the _ptsz twins (per-thread default stream) come from one macro
// each.
#include "recorder/interposer/cuda_declarations.h"
#include "recorder/interposer/hooks.h"
#include "recorder/interposer/proc_address.h"

namespace mi = memreplay::interposer;
using memreplay::EventKind;
using mi::Api;
using mi::u64;

// The wrapper `name`'s call of the real function with the arguments, recorded as describe says;
// without a real function the program sees "no runtime".
#define INTERCEPT(name, describe, ...)                                                                 \
  mi::intercept<decltype(&name)>(Api::name, __builtin_return_address(0), cudaErrorInitializationError, \
                                 describe __VA_OPT__(, ) __VA_ARGS__)

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

// --- allocation ---

MEMREPLAY_EXPORT cudaError_t cudaMalloc(void** ptr, size_t size) {
  return INTERCEPT(cudaMalloc, mi::allocation_event(mi::malloc_kind(), 0, ptr, size), ptr, size);
}

MEMREPLAY_EXPORT cudaError_t cudaMallocManaged(void** ptr, size_t size, unsigned int flags) {
  return INTERCEPT(cudaMallocManaged, mi::allocation_event(mi::malloc_kind(), 0, ptr, size), ptr, size, flags);
}

MEMREPLAY_EXPORT cudaError_t cudaFree(void* ptr) {
  return INTERCEPT(cudaFree, mi::free_event({mi::free_kind(), 0, u64(ptr)}), ptr);
}

#define MEMREPLAY_MALLOC_ASYNC(name)                                                                           \
  MEMREPLAY_EXPORT cudaError_t name(void** ptr, size_t size, cudaStream_t stream) {                            \
    return INTERCEPT(name, mi::allocation_event(EventKind::alloc, u64(stream), ptr, size), ptr, size, stream); \
  }
MEMREPLAY_MALLOC_ASYNC(cudaMallocAsync)
MEMREPLAY_MALLOC_ASYNC(cudaMallocAsync_ptsz)

#define MEMREPLAY_MALLOC_POOL_ASYNC(name)                                                                            \
  MEMREPLAY_EXPORT cudaError_t name(void** ptr, size_t size, cudaMemPool_t pool, cudaStream_t stream) {              \
    return INTERCEPT(name, mi::allocation_event(EventKind::alloc, u64(stream), ptr, size), ptr, size, pool, stream); \
  }
MEMREPLAY_MALLOC_POOL_ASYNC(cudaMallocFromPoolAsync)
MEMREPLAY_MALLOC_POOL_ASYNC(cudaMallocFromPoolAsync_ptsz)

#define MEMREPLAY_FREE_ASYNC(name)                                                                           \
  MEMREPLAY_EXPORT cudaError_t name(void* ptr, cudaStream_t stream) {                                        \
    return INTERCEPT(name, mi::free_event({EventKind::free_completed, u64(stream), u64(ptr)}), ptr, stream); \
  }
MEMREPLAY_FREE_ASYNC(cudaFreeAsync)
MEMREPLAY_FREE_ASYNC(cudaFreeAsync_ptsz)

// --- streams, events, synchronization ---

MEMREPLAY_EXPORT cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  return INTERCEPT(cudaStreamCreate, mi::stream_created_event(stream), stream);
}

MEMREPLAY_EXPORT cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags) {
  return INTERCEPT(cudaStreamCreateWithFlags, mi::stream_created_event(stream), stream, flags);
}

MEMREPLAY_EXPORT cudaError_t cudaStreamCreateWithPriority(cudaStream_t* stream, unsigned int flags, int priority) {
  return INTERCEPT(cudaStreamCreateWithPriority, mi::stream_created_event(stream), stream, flags, priority);
}

MEMREPLAY_EXPORT cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  return INTERCEPT(cudaStreamDestroy, mi::event({EventKind::stream_destroy, u64(stream)}), stream);
}

#define MEMREPLAY_EVENT_RECORD(name)                                                                            \
  MEMREPLAY_EXPORT cudaError_t name(cudaEvent_t event, cudaStream_t stream) {                                   \
    return INTERCEPT(name, mi::event({EventKind::event_record, u64(stream), 0, 0, u64(event)}), event, stream); \
  }
MEMREPLAY_EVENT_RECORD(cudaEventRecord)
MEMREPLAY_EVENT_RECORD(cudaEventRecord_ptsz)

#define MEMREPLAY_EVENT_RECORD_FLAGS(name)                                                        \
  MEMREPLAY_EXPORT cudaError_t name(cudaEvent_t event, cudaStream_t stream, unsigned int flags) { \
    const auto describe = mi::event({EventKind::event_record, u64(stream), 0, 0, u64(event)});    \
    return INTERCEPT(name, describe, event, stream, flags);                                       \
  }
MEMREPLAY_EVENT_RECORD_FLAGS(cudaEventRecordWithFlags)
MEMREPLAY_EVENT_RECORD_FLAGS(cudaEventRecordWithFlags_ptsz)

#define MEMREPLAY_STREAM_WAIT(name)                                                                 \
  MEMREPLAY_EXPORT cudaError_t name(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {   \
    const auto describe = mi::event({EventKind::stream_wait_event, u64(stream), 0, 0, u64(event)}); \
    return INTERCEPT(name, describe, stream, event, flags);                                         \
  }
MEMREPLAY_STREAM_WAIT(cudaStreamWaitEvent)
MEMREPLAY_STREAM_WAIT(cudaStreamWaitEvent_ptsz)

#define MEMREPLAY_STREAM_SYNC(name)                                                   \
  MEMREPLAY_EXPORT cudaError_t name(cudaStream_t stream) {                            \
    return INTERCEPT(name, mi::event({EventKind::synchronize, u64(stream)}), stream); \
  }
MEMREPLAY_STREAM_SYNC(cudaStreamSynchronize)
MEMREPLAY_STREAM_SYNC(cudaStreamSynchronize_ptsz)

MEMREPLAY_EXPORT cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  return INTERCEPT(cudaEventSynchronize, mi::event({EventKind::synchronize, 0, 0, 0, u64(event)}), event);
}

MEMREPLAY_EXPORT cudaError_t cudaDeviceSynchronize() {
  return INTERCEPT(cudaDeviceSynchronize, mi::event({EventKind::synchronize}));
}

// --- driver entry points handed out by the runtime ---

#define MEMREPLAY_GET_DRIVER_ENTRY_POINT(name)                                                           \
  MEMREPLAY_EXPORT cudaError_t name(const char* symbol, void** fn, unsigned long long flags,             \
                                    cudaDriverEntryPointQueryResult* status) {                           \
    return look_up_entry<decltype(&name)>(Api::name, __builtin_return_address(0), symbol, fn, -1, flags, \
                                          flags, status);                                                \
  }
MEMREPLAY_GET_DRIVER_ENTRY_POINT(cudaGetDriverEntryPoint)
MEMREPLAY_GET_DRIVER_ENTRY_POINT(cudaGetDriverEntryPoint_ptsz)

#define MEMREPLAY_GET_DRIVER_ENTRY_POINT_BY_VERSION(name)                                                \
  MEMREPLAY_EXPORT cudaError_t name(const char* symbol, void** fn, unsigned int version,                 \
                                    unsigned long long flags, cudaDriverEntryPointQueryResult* status) { \
    return look_up_entry<decltype(&name)>(Api::name, __builtin_return_address(0), symbol, fn,            \
                                          static_cast<int>(version), flags, version, flags, status);     \
  }
MEMREPLAY_GET_DRIVER_ENTRY_POINT_BY_VERSION(cudaGetDriverEntryPointByVersion)
MEMREPLAY_GET_DRIVER_ENTRY_POINT_BY_VERSION(cudaGetDriverEntryPointByVersion_ptsz)
