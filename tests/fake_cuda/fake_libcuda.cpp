// A stand-in for the CUDA driver (built as libcuda.so.1) for the interposer tests: the entry
// points the interposer wraps, plus cuGetProcAddress, handing out fake addresses and handles.
// Allocations above 1 TiB fail with CUDA_ERROR_OUT_OF_MEMORY.
#include <cuda.h>

#include <atomic>
#include <cstring>

#undef cuGetProcAddress

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

std::atomic<CUdeviceptr> g_next_address{0x7f0000000000};
std::atomic<uint64_t> g_next_handle{0x100};

CUresult fake_alloc(CUdeviceptr* ptr, size_t size) {
  if (size > (size_t{1} << 40)) return CUDA_ERROR_OUT_OF_MEMORY;
  *ptr = g_next_address.fetch_add((size + 0xfffff) & ~size_t{0xfffff});
  return CUDA_SUCCESS;
}

}  // namespace

FAKE_EXPORT CUresult cuInit(unsigned int) { return CUDA_SUCCESS; }
FAKE_EXPORT CUresult cuDeviceGetCount(int* count) { return *count = 1, CUDA_SUCCESS; }
FAKE_EXPORT CUresult cuDeviceGet(CUdevice* device, int ordinal) { return *device = ordinal, CUDA_SUCCESS; }
FAKE_EXPORT CUresult cuDeviceGetName(char* name, int length, CUdevice) {
  std::strncpy(name, "Fake GPU", static_cast<size_t>(length));
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice) { return *bytes = size_t{80} << 30, CUDA_SUCCESS; }
FAKE_EXPORT CUresult cuCtxGetDevice(CUdevice* device) { return *device = 0, CUDA_SUCCESS; }

FAKE_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* ptr, size_t size) { return fake_alloc(ptr, size); }
FAKE_EXPORT CUresult cuMemAllocManaged(CUdeviceptr* ptr, size_t size, unsigned int) { return fake_alloc(ptr, size); }
FAKE_EXPORT CUresult cuMemFree_v2(CUdeviceptr) { return CUDA_SUCCESS; }
FAKE_EXPORT CUresult cuMemAllocAsync(CUdeviceptr* ptr, size_t size, CUstream) { return fake_alloc(ptr, size); }
FAKE_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr* ptr, size_t size, CUstream) { return fake_alloc(ptr, size); }
FAKE_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr* ptr, size_t size, CUmemoryPool, CUstream) {
  return fake_alloc(ptr, size);
}
FAKE_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* ptr, size_t size, CUmemoryPool, CUstream) {
  return fake_alloc(ptr, size);
}
FAKE_EXPORT CUresult cuMemFreeAsync(CUdeviceptr, CUstream) { return CUDA_SUCCESS; }
FAKE_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr, CUstream) { return CUDA_SUCCESS; }

FAKE_EXPORT CUresult cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t, CUdeviceptr, unsigned long long) {
  return fake_alloc(ptr, size);
}
FAKE_EXPORT CUresult cuMemAddressFree(CUdeviceptr, size_t) { return CUDA_SUCCESS; }
FAKE_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t, const CUmemAllocationProp*,
                                 unsigned long long) {
  *handle = g_next_handle.fetch_add(1);
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle) { return CUDA_SUCCESS; }
FAKE_EXPORT CUresult cuMemMap(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long) {
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuMemUnmap(CUdeviceptr, size_t) { return CUDA_SUCCESS; }

FAKE_EXPORT CUresult cuStreamCreate(CUstream* stream, unsigned int) {
  *stream = reinterpret_cast<CUstream>(g_next_handle.fetch_add(1) << 4);
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuStreamCreateWithPriority(CUstream* stream, unsigned int flags, int) {
  return cuStreamCreate(stream, flags);
}
FAKE_EXPORT CUresult cuStreamDestroy_v2(CUstream) { return CUDA_SUCCESS; }
FAKE_EXPORT CUresult cuEventRecord(CUevent, CUstream) { return CUDA_SUCCESS; }
FAKE_EXPORT CUresult cuEventRecord_ptsz(CUevent, CUstream) { return CUDA_SUCCESS; }
FAKE_EXPORT CUresult cuEventRecordWithFlags(CUevent, CUstream, unsigned int) { return CUDA_SUCCESS; }
FAKE_EXPORT CUresult cuEventRecordWithFlags_ptsz(CUevent, CUstream, unsigned int) { return CUDA_SUCCESS; }
FAKE_EXPORT CUresult cuStreamWaitEvent(CUstream, CUevent, unsigned int) { return CUDA_SUCCESS; }
FAKE_EXPORT CUresult cuStreamWaitEvent_ptsz(CUstream, CUevent, unsigned int) { return CUDA_SUCCESS; }
FAKE_EXPORT CUresult cuStreamSynchronize(CUstream) { return CUDA_SUCCESS; }
FAKE_EXPORT CUresult cuStreamSynchronize_ptsz(CUstream) { return CUDA_SUCCESS; }
FAKE_EXPORT CUresult cuEventSynchronize(CUevent) { return CUDA_SUCCESS; }
FAKE_EXPORT CUresult cuCtxSynchronize() { return CUDA_SUCCESS; }
FAKE_EXPORT CUresult cuCtxSynchronize_v2(CUcontext) { return CUDA_SUCCESS; }

namespace {

struct Entry {
  const char* name;
  void* legacy;
  void* per_thread;
};

#define FAKE_ENTRY(name) \
  { #name, reinterpret_cast < void*>(&name##_v2), nullptr }
const Entry kEntries[] = {
    {"cuInit", reinterpret_cast<void*>(&cuInit), nullptr},
    {"cuDeviceGetCount", reinterpret_cast<void*>(&cuDeviceGetCount), nullptr},
    {"cuCtxGetDevice", reinterpret_cast<void*>(&cuCtxGetDevice), nullptr},
    FAKE_ENTRY(cuMemAlloc),
    FAKE_ENTRY(cuMemFree),
    {"cuMemAllocManaged", reinterpret_cast<void*>(&cuMemAllocManaged), nullptr},
    {"cuMemAllocAsync", reinterpret_cast<void*>(&cuMemAllocAsync), reinterpret_cast<void*>(&cuMemAllocAsync_ptsz)},
    {"cuMemFreeAsync", reinterpret_cast<void*>(&cuMemFreeAsync), reinterpret_cast<void*>(&cuMemFreeAsync_ptsz)},
    {"cuMemAllocFromPoolAsync", reinterpret_cast<void*>(&cuMemAllocFromPoolAsync),
     reinterpret_cast<void*>(&cuMemAllocFromPoolAsync_ptsz)},
    {"cuMemAddressReserve", reinterpret_cast<void*>(&cuMemAddressReserve), nullptr},
    {"cuMemAddressFree", reinterpret_cast<void*>(&cuMemAddressFree), nullptr},
    {"cuMemCreate", reinterpret_cast<void*>(&cuMemCreate), nullptr},
    {"cuMemRelease", reinterpret_cast<void*>(&cuMemRelease), nullptr},
    {"cuMemMap", reinterpret_cast<void*>(&cuMemMap), nullptr},
    {"cuMemUnmap", reinterpret_cast<void*>(&cuMemUnmap), nullptr},
    {"cuStreamCreate", reinterpret_cast<void*>(&cuStreamCreate), nullptr},
    FAKE_ENTRY(cuStreamDestroy),
    {"cuEventRecord", reinterpret_cast<void*>(&cuEventRecord), reinterpret_cast<void*>(&cuEventRecord_ptsz)},
    {"cuStreamWaitEvent", reinterpret_cast<void*>(&cuStreamWaitEvent),
     reinterpret_cast<void*>(&cuStreamWaitEvent_ptsz)},
    {"cuStreamSynchronize", reinterpret_cast<void*>(&cuStreamSynchronize),
     reinterpret_cast<void*>(&cuStreamSynchronize_ptsz)},
    {"cuEventSynchronize", reinterpret_cast<void*>(&cuEventSynchronize), nullptr},
    {"cuCtxSynchronize", reinterpret_cast<void*>(&cuCtxSynchronize_v2), nullptr},  // asked with 13000
};

CUresult lookup(const char* symbol, void** fn, cuuint64_t flags);

}  // namespace

FAKE_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** fn, int, cuuint64_t flags,
                                         CUdriverProcAddressQueryResult* status) {
  const CUresult rc = lookup(symbol, fn, flags);
  if (status) *status = rc == CUDA_SUCCESS ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return rc;
}

FAKE_EXPORT CUresult cuGetProcAddress(const char* symbol, void** fn, int, cuuint64_t flags) {
  return lookup(symbol, fn, flags);
}

namespace {

CUresult lookup(const char* symbol, void** fn, cuuint64_t flags) {
  if (std::strcmp(symbol, "cuGetProcAddress") == 0) {
    *fn = reinterpret_cast<void*>(&cuGetProcAddress_v2);
    return CUDA_SUCCESS;
  }
  for (const Entry& e : kEntries) {
    if (std::strcmp(e.name, symbol) != 0) continue;
    *fn = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && e.per_thread ? e.per_thread : e.legacy;
    return CUDA_SUCCESS;
  }
  *fn = nullptr;
  return CUDA_ERROR_NOT_FOUND;
}

}  // namespace
