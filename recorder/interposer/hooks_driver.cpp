// Wrappers of the CUDA driver API (libcuda.so), and of cuGetProcAddress, through which runtimes
// since CUDA 12 reach every other driver function. One line a wrapper: its name, parameters, the
// arguments it passes to the real function, and the event the call becomes (hooks.h); TWINS adds
// the _ptsz twin (the same call on the per-thread default stream).
#include "recorder/interposer/cuda_declarations.h"
#include "recorder/interposer/hooks.h"
#include "recorder/interposer/proc_address.h"

namespace mi = memreplay::interposer;
using memreplay::EventKind;
using mi::Api;
using mi::u64;

#define WRAP(...) MEMREPLAY_WRAPPER(CUresult, CUDA_ERROR_NOT_INITIALIZED, __VA_ARGS__)
#define TWINS(...) MEMREPLAY_WRAPPER_TWINS(CUresult, CUDA_ERROR_NOT_INITIALIZED, __VA_ARGS__)

// --- allocation -------------------------------------------------------------------------------

WRAP(cuMemAlloc_v2, (CUdeviceptr * ptr, size_t size), (ptr, size),
     mi::allocation_event(mi::malloc_kind(), 0, ptr, size))
WRAP(cuMemAllocManaged, (CUdeviceptr * ptr, size_t size, unsigned int flags), (ptr, size, flags),
     mi::allocation_event(mi::malloc_kind(), 0, ptr, size))
WRAP(cuMemFree_v2, (CUdeviceptr ptr), (ptr), mi::free_event({mi::free_kind(), 0, ptr}))
TWINS(cuMemAllocAsync, (CUdeviceptr * ptr, size_t size, CUstream stream), (ptr, size, stream),
      mi::allocation_event(EventKind::alloc, u64(stream), ptr, size))
TWINS(cuMemAllocFromPoolAsync, (CUdeviceptr * ptr, size_t size, CUmemoryPool pool, CUstream stream),
      (ptr, size, pool, stream), mi::allocation_event(EventKind::alloc, u64(stream), ptr, size))
TWINS(cuMemFreeAsync, (CUdeviceptr ptr, CUstream stream), (ptr, stream),
      mi::free_event({EventKind::free_completed, u64(stream), ptr}))

// --- virtual memory management ------------------------------------------------------------------

WRAP(cuMemAddressReserve,
     (CUdeviceptr * ptr, size_t size, size_t alignment, CUdeviceptr addr, unsigned long long flags),
     (ptr, size, alignment, addr, flags), mi::allocation_event(EventKind::address_reserve, 0, ptr, size))
WRAP(cuMemAddressFree, (CUdeviceptr ptr, size_t size), (ptr, size), mi::event({EventKind::address_free, 0, ptr, size}))
WRAP(cuMemCreate,
     (CUmemGenericAllocationHandle * handle, size_t size, const CUmemAllocationProp* prop, unsigned long long flags),
     (handle, size, prop, flags), mi::physical_alloc_event(handle, size))
WRAP(cuMemRelease, (CUmemGenericAllocationHandle handle), (handle),
     mi::event({EventKind::physical_free, 0, 0, 0, handle}))
WRAP(cuMemMap,
     (CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle, unsigned long long flags),
     (ptr, size, offset, handle, flags), mi::event(mi::map_call(ptr, size, handle)))
WRAP(cuMemUnmap, (CUdeviceptr ptr, size_t size), (ptr, size), mi::event(mi::unmap_call(ptr, size)))

// --- streams, events, synchronization ------------------------------------------------------------

WRAP(cuStreamCreate, (CUstream * stream, unsigned int flags), (stream, flags), mi::stream_created_event(stream))
WRAP(cuStreamCreateWithPriority, (CUstream * stream, unsigned int flags, int priority), (stream, flags, priority),
     mi::stream_created_event(stream))
WRAP(cuStreamDestroy_v2, (CUstream stream), (stream), mi::event({EventKind::stream_destroy, u64(stream)}))
TWINS(cuEventRecord, (CUevent event, CUstream stream), (event, stream),
      mi::event({EventKind::event_record, u64(stream), 0, 0, u64(event)}))
TWINS(cuEventRecordWithFlags, (CUevent event, CUstream stream, unsigned int flags), (event, stream, flags),
      mi::event({EventKind::event_record, u64(stream), 0, 0, u64(event)}))
TWINS(cuStreamWaitEvent, (CUstream stream, CUevent event, unsigned int flags), (stream, event, flags),
      mi::event({EventKind::stream_wait_event, u64(stream), 0, 0, u64(event)}))
TWINS(cuStreamSynchronize, (CUstream stream), (stream), mi::event({EventKind::synchronize, u64(stream)}))
WRAP(cuEventSynchronize, (CUevent event), (event), mi::event({EventKind::synchronize, 0, 0, 0, u64(event)}))
WRAP(cuCtxSynchronize, (), (), mi::event({EventKind::synchronize}))
WRAP(cuCtxSynchronize_v2, (CUcontext ctx), (ctx), mi::event({EventKind::synchronize}))

// --- entry-point lookup ------------------------------------------------------------------------

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

MEMREPLAY_EXPORT CUresult cuGetProcAddress(const char* symbol, void** fn, int version, cuuint64_t flags) {
  return look_up_entry<decltype(&cuGetProcAddress)>(Api::cuGetProcAddress, __builtin_return_address(0), symbol, fn,
                                                    version, flags);
}

MEMREPLAY_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** fn, int version, cuuint64_t flags,
                                              CUdriverProcAddressQueryResult* status) {
  return look_up_entry<decltype(&cuGetProcAddress_v2)>(Api::cuGetProcAddress_v2, __builtin_return_address(0), symbol,
                                                       fn, version, flags, status);
}
