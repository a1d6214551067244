// Wrappers of the CUDA driver API (libcuda.so), and of cuGetProcAddress, through which runtimes
// since CUDA 12 reach every other driver function. Each is one intercept() (hooks.h) and the
// event its call becomes; the _ptsz twins (per-thread default stream) come from one macro each.
#include "recorder/interposer/cuda_declarations.h"
#include "recorder/interposer/hooks.h"
#include "recorder/interposer/proc_address.h"

namespace mi = memreplay::interposer;
using memreplay::EventKind;
using mi::Api;
using mi::u64;

// The wrapper `name`'s call of the real function with the arguments, recorded as describe says.
#define INTERCEPT(name, describe, ...)                                                               \
  mi::intercept<decltype(&name)>(Api::name, __builtin_return_address(0), CUDA_ERROR_NOT_INITIALIZED, \
                                 describe __VA_OPT__(, ) __VA_ARGS__)

namespace {

// cuGetProcAddress[_v2]: our wrapper instead of the real function for the symbols we wrap.
template <typename Fn, typename... More>
CUresult look_up_entry(Api api, const void* caller, const char* symbol, void** fn, int version, cuuint64_t flags,
                       More... more) {
  const auto real_fn = mi::real<Fn>(api, caller);
  if (real_fn == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult rc = real_fn(symbol, fn, version, flags, more...);
  if (rc == CUDA_SUCCESS && fn != nullptr) *fn = mi::wrap_driver_entry(symbol, version, flags, *fn);
  return rc;
}

}  // namespace

// --- allocation -------------------------------------------------------------------------------

MEMREPLAY_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* ptr, size_t size) {
  return INTERCEPT(cuMemAlloc_v2, mi::allocation_event(mi::malloc_kind(), 0, ptr, size), ptr, size);
}

MEMREPLAY_EXPORT CUresult cuMemAllocManaged(CUdeviceptr* ptr, size_t size, unsigned int flags) {
  return INTERCEPT(cuMemAllocManaged, mi::allocation_event(mi::malloc_kind(), 0, ptr, size), ptr, size, flags);
}

MEMREPLAY_EXPORT CUresult cuMemFree_v2(CUdeviceptr ptr) {
  return INTERCEPT(cuMemFree_v2, mi::free_event({mi::free_kind(), 0, ptr}), ptr);
}

#define MEMREPLAY_MEM_ALLOC_ASYNC(name)                                                                        \
  MEMREPLAY_EXPORT CUresult name(CUdeviceptr* ptr, size_t size, CUstream stream) {                             \
    return INTERCEPT(name, mi::allocation_event(EventKind::alloc, u64(stream), ptr, size), ptr, size, stream); \
  }
MEMREPLAY_MEM_ALLOC_ASYNC(cuMemAllocAsync)
MEMREPLAY_MEM_ALLOC_ASYNC(cuMemAllocAsync_ptsz)

#define MEMREPLAY_MEM_ALLOC_POOL_ASYNC(name)                                                                         \
  MEMREPLAY_EXPORT CUresult name(CUdeviceptr* ptr, size_t size, CUmemoryPool pool, CUstream stream) {                \
    return INTERCEPT(name, mi::allocation_event(EventKind::alloc, u64(stream), ptr, size), ptr, size, pool, stream); \
  }
MEMREPLAY_MEM_ALLOC_POOL_ASYNC(cuMemAllocFromPoolAsync)
MEMREPLAY_MEM_ALLOC_POOL_ASYNC(cuMemAllocFromPoolAsync_ptsz)

#define MEMREPLAY_MEM_FREE_ASYNC(name)                                                                  \
  MEMREPLAY_EXPORT CUresult name(CUdeviceptr ptr, CUstream stream) {                                    \
    return INTERCEPT(name, mi::free_event({EventKind::free_completed, u64(stream), ptr}), ptr, stream); \
  }
MEMREPLAY_MEM_FREE_ASYNC(cuMemFreeAsync)
MEMREPLAY_MEM_FREE_ASYNC(cuMemFreeAsync_ptsz)

// --- virtual memory management ------------------------------------------------------------------

MEMREPLAY_EXPORT CUresult cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                              unsigned long long flags) {
  const auto describe = mi::allocation_event(EventKind::address_reserve, 0, ptr, size);
  return INTERCEPT(cuMemAddressReserve, describe, ptr, size, alignment, addr, flags);
}

MEMREPLAY_EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  return INTERCEPT(cuMemAddressFree, mi::event({EventKind::address_free, 0, ptr, size}), ptr, size);
}

// The handle is the event's aux: segment_map names the physical memory it maps.
MEMREPLAY_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                                      const CUmemAllocationProp* prop, unsigned long long flags) {
  const auto describe = [&](CUresult rc) {
    return mi::Call{EventKind::physical_alloc, 0, 0, size, mi::produced(rc, handle)};
  };
  return INTERCEPT(cuMemCreate, describe, handle, size, prop, flags);
}

MEMREPLAY_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  return INTERCEPT(cuMemRelease, mi::event({EventKind::physical_free, 0, 0, 0, handle}), handle);
}

MEMREPLAY_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                                   unsigned long long flags) {
  const auto describe = mi::event({EventKind::segment_map, 0, ptr, size, handle});
  return INTERCEPT(cuMemMap, describe, ptr, size, offset, handle, flags);
}

MEMREPLAY_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  return INTERCEPT(cuMemUnmap, mi::event({EventKind::segment_unmap, 0, ptr, size}), ptr, size);
}

// --- streams, events, synchronization ------------------------------------------------------------

MEMREPLAY_EXPORT CUresult cuStreamCreate(CUstream* stream, unsigned int flags) {
  return INTERCEPT(cuStreamCreate, mi::stream_created_event(stream), stream, flags);
}

MEMREPLAY_EXPORT CUresult cuStreamCreateWithPriority(CUstream* stream, unsigned int flags, int priority) {
  return INTERCEPT(cuStreamCreateWithPriority, mi::stream_created_event(stream), stream, flags, priority);
}

MEMREPLAY_EXPORT CUresult cuStreamDestroy_v2(CUstream stream) {
  return INTERCEPT(cuStreamDestroy_v2, mi::event({EventKind::stream_destroy, u64(stream)}), stream);
}

#define MEMREPLAY_CU_EVENT_RECORD(name)                                                                         \
  MEMREPLAY_EXPORT CUresult name(CUevent event, CUstream stream) {                                              \
    return INTERCEPT(name, mi::event({EventKind::event_record, u64(stream), 0, 0, u64(event)}), event, stream); \
  }
MEMREPLAY_CU_EVENT_RECORD(cuEventRecord)
MEMREPLAY_CU_EVENT_RECORD(cuEventRecord_ptsz)

#define MEMREPLAY_CU_EVENT_RECORD_FLAGS(name)                                                  \
  MEMREPLAY_EXPORT CUresult name(CUevent event, CUstream stream, unsigned int flags) {         \
    const auto describe = mi::event({EventKind::event_record, u64(stream), 0, 0, u64(event)}); \
    return INTERCEPT(name, describe, event, stream, flags);                                    \
  }
MEMREPLAY_CU_EVENT_RECORD_FLAGS(cuEventRecordWithFlags)
MEMREPLAY_CU_EVENT_RECORD_FLAGS(cuEventRecordWithFlags_ptsz)

#define MEMREPLAY_CU_STREAM_WAIT(name)                                                              \
  MEMREPLAY_EXPORT CUresult name(CUstream stream, CUevent event, unsigned int flags) {              \
    const auto describe = mi::event({EventKind::stream_wait_event, u64(stream), 0, 0, u64(event)}); \
    return INTERCEPT(name, describe, stream, event, flags);                                         \
  }
MEMREPLAY_CU_STREAM_WAIT(cuStreamWaitEvent)
MEMREPLAY_CU_STREAM_WAIT(cuStreamWaitEvent_ptsz)

#define MEMREPLAY_CU_STREAM_SYNC(name)                                                \
  MEMREPLAY_EXPORT CUresult name(CUstream stream) {                                   \
    return INTERCEPT(name, mi::event({EventKind::synchronize, u64(stream)}), stream); \
  }
MEMREPLAY_CU_STREAM_SYNC(cuStreamSynchronize)
MEMREPLAY_CU_STREAM_SYNC(cuStreamSynchronize_ptsz)

MEMREPLAY_EXPORT CUresult cuEventSynchronize(CUevent event) {
  return INTERCEPT(cuEventSynchronize, mi::event({EventKind::synchronize, 0, 0, 0, u64(event)}), event);
}

MEMREPLAY_EXPORT CUresult cuCtxSynchronize() {
  return INTERCEPT(cuCtxSynchronize, mi::event({EventKind::synchronize}));
}

MEMREPLAY_EXPORT CUresult cuCtxSynchronize_v2(CUcontext ctx) {
  return INTERCEPT(cuCtxSynchronize_v2, mi::event({EventKind::synchronize}), ctx);
}

// --- entry-point lookup ------------------------------------------------------------------------

MEMREPLAY_EXPORT CUresult cuGetProcAddress(const char* symbol, void** fn, int version, cuuint64_t flags) {
  return look_up_entry<decltype(&cuGetProcAddress)>(Api::cuGetProcAddress, __builtin_return_address(0), symbol, fn,
                                                    version, flags);
}

MEMREPLAY_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** fn, int version, cuuint64_t flags,
                                              CUdriverProcAddressQueryResult* status) {
  return look_up_entry<decltype(&cuGetProcAddress_v2)>(Api::cuGetProcAddress_v2, __builtin_return_address(0), symbol,
                                                       fn, version, flags, status);
}
