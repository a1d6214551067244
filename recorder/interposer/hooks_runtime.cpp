// Wrappers of the CUDA runtime API (libcudart.so). Each calls the real function inside a
// CallScope, so the driver calls the runtime makes for it are not recorded a second time.
#include "recorder/interposer/cuda_declarations.h"
#include "recorder/interposer/hooks.h"
#include "recorder/interposer/proc_address.h"

namespace mi = memreplay::interposer;
using memreplay::EventKind;
using mi::Api;
using mi::free_kind;
using mi::malloc_kind;
using mi::u64;

namespace {

// The real function, or a failure the program sees as "no runtime" when there is none.
#define REAL_OR_FAIL(api, fn_type) \
  auto real_fn = mi::real<fn_type>(api, __builtin_return_address(0)); \
  if (real_fn == nullptr) return cudaErrorInitializationError

template <typename Fn, typename... Args>
cudaError_t malloc_like(Api api, EventKind kind, const void* caller, void** ptr, size_t size, cudaStream_t stream,
                        Fn real_fn, Args... args) {
  mi::CallScope scope;
  const cudaError_t rc = real_fn(ptr, size, args...);
  if (scope.outermost())
    mi::record_call({api, kind, rc, u64(stream), rc == cudaSuccess && ptr ? u64(*ptr) : 0, size, 0, caller});
  return rc;
}

}  // namespace

MEMREPLAY_EXPORT cudaError_t cudaMalloc(void** ptr, size_t size) {
  REAL_OR_FAIL(Api::cudaMalloc, decltype(&cudaMalloc));
  return malloc_like(Api::cudaMalloc, malloc_kind(), __builtin_return_address(0), ptr, size, nullptr, real_fn);
}

MEMREPLAY_EXPORT cudaError_t cudaMallocManaged(void** ptr, size_t size, unsigned int flags) {
  REAL_OR_FAIL(Api::cudaMallocManaged, decltype(&cudaMallocManaged));
  return malloc_like(Api::cudaMallocManaged, malloc_kind(), __builtin_return_address(0), ptr, size, nullptr, real_fn,
                     flags);
}

MEMREPLAY_EXPORT cudaError_t cudaFree(void* ptr) {
  REAL_OR_FAIL(Api::cudaFree, decltype(&cudaFree));
  mi::CallScope scope;
  const cudaError_t rc = real_fn(ptr);
  // cudaFree(nullptr) is the classic way to create the context: nothing is freed.
  if (scope.outermost() && ptr != nullptr)
    mi::record_call({Api::cudaFree, free_kind(), rc, 0, u64(ptr), 0, 0, __builtin_return_address(0)});
  return rc;
}

#define MEMREPLAY_MALLOC_ASYNC(name)                                                                          \
  MEMREPLAY_EXPORT cudaError_t name(void** ptr, size_t size, cudaStream_t stream) {                            \
    REAL_OR_FAIL(Api::name, decltype(&name));                                                                 \
    return malloc_like(Api::name, EventKind::alloc, __builtin_return_address(0), ptr, size, stream, real_fn, \
                       stream);                                                                               \
  }
MEMREPLAY_MALLOC_ASYNC(cudaMallocAsync)
MEMREPLAY_MALLOC_ASYNC(cudaMallocAsync_ptsz)

#define MEMREPLAY_MALLOC_POOL_ASYNC(name)                                                                     \
  MEMREPLAY_EXPORT cudaError_t name(void** ptr, size_t size, cudaMemPool_t pool, cudaStream_t stream) {        \
    REAL_OR_FAIL(Api::name, decltype(&name));                                                                 \
    return malloc_like(Api::name, EventKind::alloc, __builtin_return_address(0), ptr, size, stream, real_fn, \
                       pool, stream);                                                                         \
  }
MEMREPLAY_MALLOC_POOL_ASYNC(cudaMallocFromPoolAsync)
MEMREPLAY_MALLOC_POOL_ASYNC(cudaMallocFromPoolAsync_ptsz)

#define MEMREPLAY_FREE_ASYNC(name)                                                                            \
  MEMREPLAY_EXPORT cudaError_t name(void* ptr, cudaStream_t stream) {                                          \
    REAL_OR_FAIL(Api::name, decltype(&name));                                                                 \
    mi::CallScope scope;                                                                                      \
    const cudaError_t rc = real_fn(ptr, stream);                                                              \
    if (scope.outermost() && ptr != nullptr)                                                                  \
      mi::record_call({Api::name, EventKind::free_completed, rc, u64(stream), u64(ptr), 0, 0,                 \
                       __builtin_return_address(0)});                                                         \
    return rc;                                                                                                \
  }
MEMREPLAY_FREE_ASYNC(cudaFreeAsync)
MEMREPLAY_FREE_ASYNC(cudaFreeAsync_ptsz)

// --- streams and events ---

template <typename Fn, typename... Args>
static cudaError_t create_stream(Api api, const void* caller, Fn real_fn, cudaStream_t* stream, Args... args) {
  mi::CallScope scope;
  const cudaError_t rc = real_fn(stream, args...);
  if (scope.outermost())
    mi::record_call({api, EventKind::stream_create, rc, rc == cudaSuccess && stream ? u64(*stream) : 0, 0, 0, 0, caller});
  return rc;
}

MEMREPLAY_EXPORT cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  REAL_OR_FAIL(Api::cudaStreamCreate, decltype(&cudaStreamCreate));
  return create_stream(Api::cudaStreamCreate, __builtin_return_address(0), real_fn, stream);
}

MEMREPLAY_EXPORT cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags) {
  REAL_OR_FAIL(Api::cudaStreamCreateWithFlags, decltype(&cudaStreamCreateWithFlags));
  return create_stream(Api::cudaStreamCreateWithFlags, __builtin_return_address(0), real_fn, stream, flags);
}

MEMREPLAY_EXPORT cudaError_t cudaStreamCreateWithPriority(cudaStream_t* stream, unsigned int flags, int priority) {
  REAL_OR_FAIL(Api::cudaStreamCreateWithPriority, decltype(&cudaStreamCreateWithPriority));
  return create_stream(Api::cudaStreamCreateWithPriority, __builtin_return_address(0), real_fn, stream, flags,
                       priority);
}

MEMREPLAY_EXPORT cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  REAL_OR_FAIL(Api::cudaStreamDestroy, decltype(&cudaStreamDestroy));
  mi::CallScope scope;
  const cudaError_t rc = real_fn(stream);
  if (scope.outermost())
    mi::record_call({Api::cudaStreamDestroy, EventKind::stream_destroy, rc, u64(stream), 0, 0, 0,
                     __builtin_return_address(0)});
  return rc;
}

#define MEMREPLAY_EVENT_RECORD(name)                                                                          \
  MEMREPLAY_EXPORT cudaError_t name(cudaEvent_t event, cudaStream_t stream) {                                  \
    REAL_OR_FAIL(Api::name, decltype(&name));                                                                 \
    mi::CallScope scope;                                                                                      \
    const cudaError_t rc = real_fn(event, stream);                                                            \
    if (scope.outermost())                                                                                    \
      mi::record_call({Api::name, EventKind::event_record, rc, u64(stream), 0, 0, u64(event),                 \
                       __builtin_return_address(0)});                                                         \
    return rc;                                                                                                \
  }
MEMREPLAY_EVENT_RECORD(cudaEventRecord)
MEMREPLAY_EVENT_RECORD(cudaEventRecord_ptsz)

#define MEMREPLAY_EVENT_RECORD_FLAGS(name)                                                                    \
  MEMREPLAY_EXPORT cudaError_t name(cudaEvent_t event, cudaStream_t stream, unsigned int flags) {              \
    REAL_OR_FAIL(Api::name, decltype(&name));                                                                 \
    mi::CallScope scope;                                                                                      \
    const cudaError_t rc = real_fn(event, stream, flags);                                                     \
    if (scope.outermost())                                                                                    \
      mi::record_call({Api::name, EventKind::event_record, rc, u64(stream), 0, 0, u64(event),                 \
                       __builtin_return_address(0)});                                                         \
    return rc;                                                                                                \
  }
MEMREPLAY_EVENT_RECORD_FLAGS(cudaEventRecordWithFlags)
MEMREPLAY_EVENT_RECORD_FLAGS(cudaEventRecordWithFlags_ptsz)

#define MEMREPLAY_STREAM_WAIT(name)                                                                           \
  MEMREPLAY_EXPORT cudaError_t name(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {              \
    REAL_OR_FAIL(Api::name, decltype(&name));                                                                 \
    mi::CallScope scope;                                                                                      \
    const cudaError_t rc = real_fn(stream, event, flags);                                                     \
    if (scope.outermost())                                                                                    \
      mi::record_call({Api::name, EventKind::stream_wait_event, rc, u64(stream), 0, 0, u64(event),            \
                       __builtin_return_address(0)});                                                         \
    return rc;                                                                                                \
  }
MEMREPLAY_STREAM_WAIT(cudaStreamWaitEvent)
MEMREPLAY_STREAM_WAIT(cudaStreamWaitEvent_ptsz)

#define MEMREPLAY_STREAM_SYNC(name)                                                                           \
  MEMREPLAY_EXPORT cudaError_t name(cudaStream_t stream) {                                                     \
    REAL_OR_FAIL(Api::name, decltype(&name));                                                                 \
    mi::CallScope scope;                                                                                      \
    const cudaError_t rc = real_fn(stream);                                                                   \
    if (scope.outermost())                                                                                    \
      mi::record_call({Api::name, EventKind::synchronize, rc, u64(stream), 0, 0, 0, __builtin_return_address(0)}); \
    return rc;                                                                                                \
  }
MEMREPLAY_STREAM_SYNC(cudaStreamSynchronize)
MEMREPLAY_STREAM_SYNC(cudaStreamSynchronize_ptsz)

MEMREPLAY_EXPORT cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  REAL_OR_FAIL(Api::cudaEventSynchronize, decltype(&cudaEventSynchronize));
  mi::CallScope scope;
  const cudaError_t rc = real_fn(event);
  if (scope.outermost())
    mi::record_call({Api::cudaEventSynchronize, EventKind::synchronize, rc, 0, 0, 0, u64(event),
                     __builtin_return_address(0)});
  return rc;
}

MEMREPLAY_EXPORT cudaError_t cudaDeviceSynchronize() {
  REAL_OR_FAIL(Api::cudaDeviceSynchronize, decltype(&cudaDeviceSynchronize));
  mi::CallScope scope;
  const cudaError_t rc = real_fn();
  if (scope.outermost())
    mi::record_call({Api::cudaDeviceSynchronize, EventKind::synchronize, rc, 0, 0, 0, 0, __builtin_return_address(0)});
  return rc;
}

// --- driver entry points handed out by the runtime: ours, for the functions we wrap ---

MEMREPLAY_EXPORT cudaError_t cudaGetDriverEntryPoint(const char* symbol, void** fn, unsigned long long flags,
                                                     cudaDriverEntryPointQueryResult* status) {
  REAL_OR_FAIL(Api::cudaGetDriverEntryPoint, decltype(&cudaGetDriverEntryPoint));
  const cudaError_t rc = real_fn(symbol, fn, flags, status);
  if (rc == cudaSuccess && fn != nullptr) *fn = mi::wrap_driver_entry(symbol, -1, flags, *fn);
  return rc;
}

MEMREPLAY_EXPORT cudaError_t cudaGetDriverEntryPoint_ptsz(const char* symbol, void** fn, unsigned long long flags,
                                                          cudaDriverEntryPointQueryResult* status) {
  REAL_OR_FAIL(Api::cudaGetDriverEntryPoint_ptsz, decltype(&cudaGetDriverEntryPoint_ptsz));
  const cudaError_t rc = real_fn(symbol, fn, flags, status);
  if (rc == cudaSuccess && fn != nullptr) *fn = mi::wrap_driver_entry(symbol, -1, flags, *fn);
  return rc;
}

MEMREPLAY_EXPORT cudaError_t cudaGetDriverEntryPointByVersion(const char* symbol, void** fn, unsigned int version,
                                                              unsigned long long flags,
                                                              cudaDriverEntryPointQueryResult* status) {
  REAL_OR_FAIL(Api::cudaGetDriverEntryPointByVersion, decltype(&cudaGetDriverEntryPointByVersion));
  const cudaError_t rc = real_fn(symbol, fn, version, flags, status);
  if (rc == cudaSuccess && fn != nullptr) *fn = mi::wrap_driver_entry(symbol, static_cast<int>(version), flags, *fn);
  return rc;
}

MEMREPLAY_EXPORT cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char* symbol, void** fn, unsigned int version,
                                                                   unsigned long long flags,
                                                                   cudaDriverEntryPointQueryResult* status) {
  REAL_OR_FAIL(Api::cudaGetDriverEntryPointByVersion_ptsz, decltype(&cudaGetDriverEntryPointByVersion_ptsz));
  const cudaError_t rc = real_fn(symbol, fn, version, flags, status);
  if (rc == cudaSuccess && fn != nullptr) *fn = mi::wrap_driver_entry(symbol, static_cast<int>(version), flags, *fn);
  return rc;
}
