// Wrappers of the CUDA driver API (libcuda.so), and of cuGetProcAddress, through which runtimes
// since CUDA 12 reach every other driver function.
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

#define REAL_OR_FAIL(api, fn_type) \
  auto real_fn = mi::real<fn_type>(api, __builtin_return_address(0)); \
  if (real_fn == nullptr) return CUDA_ERROR_NOT_INITIALIZED

// Records `call` with whatever the call returned, if it is the outermost interposed call.
template <typename Fn, typename... Args>
CUresult traced(const mi::CallScope& scope, mi::Call call, Fn real_fn, Args... args) {
  const CUresult rc = real_fn(args...);
  call.rc = rc;
  if (scope.outermost()) mi::record_call(call);
  return rc;
}

}  // namespace

// --- allocation -------------------------------------------------------------------------------

MEMREPLAY_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* ptr, size_t size) {
  REAL_OR_FAIL(Api::cuMemAlloc_v2, decltype(&cuMemAlloc_v2));
  mi::CallScope scope;
  const CUresult rc = real_fn(ptr, size);
  if (scope.outermost())
    mi::record_call({Api::cuMemAlloc_v2, malloc_kind(), rc, 0, rc == CUDA_SUCCESS && ptr ? *ptr : 0, size, 0,
                     __builtin_return_address(0)});
  return rc;
}

MEMREPLAY_EXPORT CUresult cuMemAllocManaged(CUdeviceptr* ptr, size_t size, unsigned int flags) {
  REAL_OR_FAIL(Api::cuMemAllocManaged, decltype(&cuMemAllocManaged));
  mi::CallScope scope;
  const CUresult rc = real_fn(ptr, size, flags);
  if (scope.outermost())
    mi::record_call({Api::cuMemAllocManaged, malloc_kind(), rc, 0, rc == CUDA_SUCCESS && ptr ? *ptr : 0, size, 0,
                     __builtin_return_address(0)});
  return rc;
}

MEMREPLAY_EXPORT CUresult cuMemFree_v2(CUdeviceptr ptr) {
  REAL_OR_FAIL(Api::cuMemFree_v2, decltype(&cuMemFree_v2));
  mi::CallScope scope;
  const CUresult rc = real_fn(ptr);
  if (scope.outermost() && ptr != 0)
    mi::record_call({Api::cuMemFree_v2, free_kind(), rc, 0, ptr, 0, 0, __builtin_return_address(0)});
  return rc;
}

#define MEMREPLAY_MEM_ALLOC_ASYNC(name)                                                                \
  MEMREPLAY_EXPORT CUresult name(CUdeviceptr* ptr, size_t size, CUstream stream) {                      \
    REAL_OR_FAIL(Api::name, decltype(&name));                                                          \
    mi::CallScope scope;                                                                               \
    const CUresult rc = real_fn(ptr, size, stream);                                                    \
    if (scope.outermost())                                                                             \
      mi::record_call({Api::name, EventKind::alloc, rc, u64(stream), rc == CUDA_SUCCESS && ptr ? *ptr : 0, \
                       size, 0, __builtin_return_address(0)});                                         \
    return rc;                                                                                         \
  }
MEMREPLAY_MEM_ALLOC_ASYNC(cuMemAllocAsync)
MEMREPLAY_MEM_ALLOC_ASYNC(cuMemAllocAsync_ptsz)

#define MEMREPLAY_MEM_ALLOC_POOL_ASYNC(name)                                                           \
  MEMREPLAY_EXPORT CUresult name(CUdeviceptr* ptr, size_t size, CUmemoryPool pool, CUstream stream) {   \
    REAL_OR_FAIL(Api::name, decltype(&name));                                                          \
    mi::CallScope scope;                                                                               \
    const CUresult rc = real_fn(ptr, size, pool, stream);                                              \
    if (scope.outermost())                                                                             \
      mi::record_call({Api::name, EventKind::alloc, rc, u64(stream), rc == CUDA_SUCCESS && ptr ? *ptr : 0, \
                       size, 0, __builtin_return_address(0)});                                         \
    return rc;                                                                                         \
  }
MEMREPLAY_MEM_ALLOC_POOL_ASYNC(cuMemAllocFromPoolAsync)
MEMREPLAY_MEM_ALLOC_POOL_ASYNC(cuMemAllocFromPoolAsync_ptsz)

#define MEMREPLAY_MEM_FREE_ASYNC(name)                                                                 \
  MEMREPLAY_EXPORT CUresult name(CUdeviceptr ptr, CUstream stream) {                                    \
    REAL_OR_FAIL(Api::name, decltype(&name));                                                          \
    mi::CallScope scope;                                                                               \
    const CUresult rc = real_fn(ptr, stream);                                                          \
    if (scope.outermost() && ptr != 0)                                                                 \
      mi::record_call({Api::name, EventKind::free_completed, rc, u64(stream), ptr, 0, 0,               \
                       __builtin_return_address(0)});                                                  \
    return rc;                                                                                         \
  }
MEMREPLAY_MEM_FREE_ASYNC(cuMemFreeAsync)
MEMREPLAY_MEM_FREE_ASYNC(cuMemFreeAsync_ptsz)

// --- virtual memory management ------------------------------------------------------------------

MEMREPLAY_EXPORT CUresult cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                              unsigned long long flags) {
  REAL_OR_FAIL(Api::cuMemAddressReserve, decltype(&cuMemAddressReserve));
  mi::CallScope scope;
  const CUresult rc = real_fn(ptr, size, alignment, addr, flags);
  if (scope.outermost())
    mi::record_call({Api::cuMemAddressReserve, EventKind::address_reserve, rc, 0,
                     rc == CUDA_SUCCESS && ptr ? *ptr : 0, size, 0, __builtin_return_address(0)});
  return rc;
}

MEMREPLAY_EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  REAL_OR_FAIL(Api::cuMemAddressFree, decltype(&cuMemAddressFree));
  mi::CallScope scope;
  return traced(scope, {Api::cuMemAddressFree, EventKind::address_free, 0, 0, ptr, size, 0, __builtin_return_address(0)},
                real_fn, ptr, size);
}

MEMREPLAY_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                                      const CUmemAllocationProp* prop, unsigned long long flags) {
  REAL_OR_FAIL(Api::cuMemCreate, decltype(&cuMemCreate));
  mi::CallScope scope;
  const CUresult rc = real_fn(handle, size, prop, flags);
  if (scope.outermost())
    mi::record_call({Api::cuMemCreate, EventKind::physical_alloc, rc, 0, 0, size,
                     rc == CUDA_SUCCESS && handle ? static_cast<uint64_t>(*handle) : 0, __builtin_return_address(0)});
  return rc;
}

MEMREPLAY_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  REAL_OR_FAIL(Api::cuMemRelease, decltype(&cuMemRelease));
  mi::CallScope scope;
  return traced(scope, {Api::cuMemRelease, EventKind::physical_free, 0, 0, 0, 0, handle, __builtin_return_address(0)},
                real_fn, handle);
}

MEMREPLAY_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                                   unsigned long long flags) {
  REAL_OR_FAIL(Api::cuMemMap, decltype(&cuMemMap));
  mi::CallScope scope;
  return traced(scope, {Api::cuMemMap, EventKind::segment_map, 0, 0, ptr, size, handle, __builtin_return_address(0)},
                real_fn, ptr, size, offset, handle, flags);
}

MEMREPLAY_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  REAL_OR_FAIL(Api::cuMemUnmap, decltype(&cuMemUnmap));
  mi::CallScope scope;
  return traced(scope, {Api::cuMemUnmap, EventKind::segment_unmap, 0, 0, ptr, size, 0, __builtin_return_address(0)},
                real_fn, ptr, size);
}

// --- streams, events, synchronization ------------------------------------------------------------

MEMREPLAY_EXPORT CUresult cuStreamCreate(CUstream* stream, unsigned int flags) {
  REAL_OR_FAIL(Api::cuStreamCreate, decltype(&cuStreamCreate));
  mi::CallScope scope;
  const CUresult rc = real_fn(stream, flags);
  if (scope.outermost())
    mi::record_call({Api::cuStreamCreate, EventKind::stream_create, rc, rc == CUDA_SUCCESS && stream ? u64(*stream) : 0,
                     0, 0, 0, __builtin_return_address(0)});
  return rc;
}

MEMREPLAY_EXPORT CUresult cuStreamCreateWithPriority(CUstream* stream, unsigned int flags, int priority) {
  REAL_OR_FAIL(Api::cuStreamCreateWithPriority, decltype(&cuStreamCreateWithPriority));
  mi::CallScope scope;
  const CUresult rc = real_fn(stream, flags, priority);
  if (scope.outermost())
    mi::record_call({Api::cuStreamCreateWithPriority, EventKind::stream_create, rc,
                     rc == CUDA_SUCCESS && stream ? u64(*stream) : 0, 0, 0, 0, __builtin_return_address(0)});
  return rc;
}

MEMREPLAY_EXPORT CUresult cuStreamDestroy_v2(CUstream stream) {
  REAL_OR_FAIL(Api::cuStreamDestroy_v2, decltype(&cuStreamDestroy_v2));
  mi::CallScope scope;
  return traced(scope, {Api::cuStreamDestroy_v2, EventKind::stream_destroy, 0, u64(stream), 0, 0, 0,
                        __builtin_return_address(0)},
                real_fn, stream);
}

#define MEMREPLAY_CU_EVENT_RECORD(name)                                                                    \
  MEMREPLAY_EXPORT CUresult name(CUevent event, CUstream stream) {                                          \
    REAL_OR_FAIL(Api::name, decltype(&name));                                                              \
    mi::CallScope scope;                                                                                   \
    return traced(scope, {Api::name, EventKind::event_record, 0, u64(stream), 0, 0, u64(event),            \
                          __builtin_return_address(0)},                                                    \
                  real_fn, event, stream);                                                                 \
  }
MEMREPLAY_CU_EVENT_RECORD(cuEventRecord)
MEMREPLAY_CU_EVENT_RECORD(cuEventRecord_ptsz)

#define MEMREPLAY_CU_EVENT_RECORD_FLAGS(name)                                                              \
  MEMREPLAY_EXPORT CUresult name(CUevent event, CUstream stream, unsigned int flags) {                      \
    REAL_OR_FAIL(Api::name, decltype(&name));                                                              \
    mi::CallScope scope;                                                                                   \
    return traced(scope, {Api::name, EventKind::event_record, 0, u64(stream), 0, 0, u64(event),            \
                          __builtin_return_address(0)},                                                    \
                  real_fn, event, stream, flags);                                                          \
  }
MEMREPLAY_CU_EVENT_RECORD_FLAGS(cuEventRecordWithFlags)
MEMREPLAY_CU_EVENT_RECORD_FLAGS(cuEventRecordWithFlags_ptsz)

#define MEMREPLAY_CU_STREAM_WAIT(name)                                                                     \
  MEMREPLAY_EXPORT CUresult name(CUstream stream, CUevent event, unsigned int flags) {                      \
    REAL_OR_FAIL(Api::name, decltype(&name));                                                              \
    mi::CallScope scope;                                                                                   \
    return traced(scope, {Api::name, EventKind::stream_wait_event, 0, u64(stream), 0, 0, u64(event),       \
                          __builtin_return_address(0)},                                                    \
                  real_fn, stream, event, flags);                                                          \
  }
MEMREPLAY_CU_STREAM_WAIT(cuStreamWaitEvent)
MEMREPLAY_CU_STREAM_WAIT(cuStreamWaitEvent_ptsz)

#define MEMREPLAY_CU_STREAM_SYNC(name)                                                                     \
  MEMREPLAY_EXPORT CUresult name(CUstream stream) {                                                         \
    REAL_OR_FAIL(Api::name, decltype(&name));                                                              \
    mi::CallScope scope;                                                                                   \
    return traced(scope, {Api::name, EventKind::synchronize, 0, u64(stream), 0, 0, 0, __builtin_return_address(0)}, \
                  real_fn, stream);                                                                        \
  }
MEMREPLAY_CU_STREAM_SYNC(cuStreamSynchronize)
MEMREPLAY_CU_STREAM_SYNC(cuStreamSynchronize_ptsz)

MEMREPLAY_EXPORT CUresult cuEventSynchronize(CUevent event) {
  REAL_OR_FAIL(Api::cuEventSynchronize, decltype(&cuEventSynchronize));
  mi::CallScope scope;
  return traced(scope, {Api::cuEventSynchronize, EventKind::synchronize, 0, 0, 0, 0, u64(event),
                        __builtin_return_address(0)},
                real_fn, event);
}

MEMREPLAY_EXPORT CUresult cuCtxSynchronize() {
  REAL_OR_FAIL(Api::cuCtxSynchronize, decltype(&cuCtxSynchronize));
  mi::CallScope scope;
  return traced(scope, {Api::cuCtxSynchronize, EventKind::synchronize, 0, 0, 0, 0, 0, __builtin_return_address(0)},
                real_fn);
}

MEMREPLAY_EXPORT CUresult cuCtxSynchronize_v2(CUcontext ctx) {
  REAL_OR_FAIL(Api::cuCtxSynchronize_v2, decltype(&cuCtxSynchronize_v2));
  mi::CallScope scope;
  return traced(scope, {Api::cuCtxSynchronize_v2, EventKind::synchronize, 0, 0, 0, 0, 0, __builtin_return_address(0)},
                real_fn, ctx);
}

// --- entry-point lookup ------------------------------------------------------------------------

MEMREPLAY_EXPORT CUresult cuGetProcAddress(const char* symbol, void** fn, int version, cuuint64_t flags) {
  REAL_OR_FAIL(Api::cuGetProcAddress, decltype(&cuGetProcAddress));
  const CUresult rc = real_fn(symbol, fn, version, flags);
  if (rc == CUDA_SUCCESS && fn != nullptr) *fn = mi::wrap_driver_entry(symbol, version, flags, *fn);
  return rc;
}

MEMREPLAY_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** fn, int version, cuuint64_t flags,
                                              CUdriverProcAddressQueryResult* status) {
  REAL_OR_FAIL(Api::cuGetProcAddress_v2, decltype(&cuGetProcAddress_v2));
  const CUresult rc = real_fn(symbol, fn, version, flags, status);
  if (rc == CUDA_SUCCESS && fn != nullptr) *fn = mi::wrap_driver_entry(symbol, version, flags, *fn);
  return rc;
}
