// A stand-in for the CUDA runtime (built as libcudart.so.13) for the interposer tests. Like the
// real one since CUDA 12, it reaches the driver only through dlopen("libcuda.so.1") +
// dlsym(cuGetProcAddress_v2) + cuGetProcAddress: the path the interposer must catch.
// It also serves tools/bench/interposer_bench (the interposer's own cost per call, no GPU): the
// device, event and memory-pool calls at the end return fixed answers without the driver.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <type_traits>

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

// The driver functions this runtime calls, each as: the Driver member that holds it, the function
// it is (for the member's type) and the base name it is looked up by, which at version 13000 is
// answered with the newest variant (cuMemAlloc: cuMemAlloc_v2). One list, so that the members
// and their lookups cannot drift apart.
// clang-format off
#define FAKE_DRIVER_FUNCTIONS(X)                                    \
  X(mem_alloc, cuMemAlloc_v2, "cuMemAlloc")                         \
  X(mem_free, cuMemFree_v2, "cuMemFree")                            \
  X(mem_alloc_managed, cuMemAllocManaged, "cuMemAllocManaged")      \
  X(mem_alloc_async, cuMemAllocAsync, "cuMemAllocAsync")            \
  X(mem_free_async, cuMemFreeAsync, "cuMemFreeAsync")               \
  X(stream_create, cuStreamCreate, "cuStreamCreate")                \
  X(stream_destroy, cuStreamDestroy_v2, "cuStreamDestroy")          \
  X(event_record, cuEventRecord, "cuEventRecord")                   \
  X(stream_wait_event, cuStreamWaitEvent, "cuStreamWaitEvent")      \
  X(stream_synchronize, cuStreamSynchronize, "cuStreamSynchronize") \
  X(event_synchronize, cuEventSynchronize, "cuEventSynchronize")    \
  X(ctx_synchronize, cuCtxSynchronize_v2, "cuCtxSynchronize")
// clang-format on

struct Driver {
#define FAKE_DRIVER_MEMBER(member, function, name) decltype(&function) member;
  FAKE_DRIVER_FUNCTIONS(FAKE_DRIVER_MEMBER)
#undef FAKE_DRIVER_MEMBER
  decltype(&cuGetProcAddress_v2) get_proc_address;
};

const Driver& driver() {
  static const Driver d = [] {
    Driver r{};
    void* h = dlopen("libcuda.so.1", RTLD_NOW);
    if (!h) std::abort();
    r.get_proc_address = reinterpret_cast<decltype(r.get_proc_address)>(dlsym(h, "cuGetProcAddress_v2"));
    if (!r.get_proc_address) std::abort();
    auto get = [&](const char* name, auto& fn) {
      void* p = nullptr;
      CUdriverProcAddressQueryResult status{};
      if (r.get_proc_address(name, &p, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &status) != CUDA_SUCCESS) std::abort();
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
    };
#define FAKE_DRIVER_GET(member, function, name) get(name, r.member);
    FAKE_DRIVER_FUNCTIONS(FAKE_DRIVER_GET)
#undef FAKE_DRIVER_GET
    return r;
  }();
  return d;
}

cudaError_t to_runtime(CUresult rc) {
  return rc == CUDA_SUCCESS               ? cudaSuccess
         : rc == CUDA_ERROR_OUT_OF_MEMORY ? cudaErrorMemoryAllocation
                                          : cudaErrorUnknown;
}

}  // namespace

FAKE_EXPORT cudaError_t cudaMalloc(void** ptr, size_t size) {
  CUdeviceptr p = 0;
  const CUresult rc = driver().mem_alloc(&p, size);
  *ptr = reinterpret_cast<void*>(p);
  return to_runtime(rc);
}
FAKE_EXPORT cudaError_t cudaMallocManaged(void** ptr, size_t size, unsigned int flags) {
  CUdeviceptr p = 0;
  const CUresult rc = driver().mem_alloc_managed(&p, size, flags);
  *ptr = reinterpret_cast<void*>(p);
  return to_runtime(rc);
}
FAKE_EXPORT cudaError_t cudaFree(void* ptr) {
  return ptr ? to_runtime(driver().mem_free(reinterpret_cast<CUdeviceptr>(ptr))) : cudaSuccess;
}
FAKE_EXPORT cudaError_t cudaMallocAsync(void** ptr, size_t size, cudaStream_t stream) {
  CUdeviceptr p = 0;
  const CUresult rc = driver().mem_alloc_async(&p, size, reinterpret_cast<CUstream>(stream));
  *ptr = reinterpret_cast<void*>(p);
  return to_runtime(rc);
}
FAKE_EXPORT cudaError_t cudaFreeAsync(void* ptr, cudaStream_t stream) {
  return to_runtime(driver().mem_free_async(reinterpret_cast<CUdeviceptr>(ptr), reinterpret_cast<CUstream>(stream)));
}
FAKE_EXPORT cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  CUstream s = nullptr;
  const CUresult rc = driver().stream_create(&s, 0);
  *stream = reinterpret_cast<cudaStream_t>(s);
  return to_runtime(rc);
}
FAKE_EXPORT cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  return to_runtime(driver().stream_destroy(reinterpret_cast<CUstream>(stream)));
}
FAKE_EXPORT cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  return to_runtime(driver().event_record(reinterpret_cast<CUevent>(event), reinterpret_cast<CUstream>(stream)));
}
FAKE_EXPORT cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  return to_runtime(
      driver().stream_wait_event(reinterpret_cast<CUstream>(stream), reinterpret_cast<CUevent>(event), flags));
}
FAKE_EXPORT cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  return to_runtime(driver().stream_synchronize(reinterpret_cast<CUstream>(stream)));
}
FAKE_EXPORT cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  return to_runtime(driver().event_synchronize(reinterpret_cast<CUevent>(event)));
}
FAKE_EXPORT cudaError_t cudaDeviceSynchronize() { return to_runtime(driver().ctx_synchronize(nullptr)); }

// Set-up calls interposer_bench makes; none of them is interposed.
namespace {
std::atomic<uintptr_t> g_next_event{0x1000};
}  // namespace
FAKE_EXPORT cudaError_t cudaGetDeviceCount(int* count) { return *count = 1, cudaSuccess; }
FAKE_EXPORT cudaError_t cudaSetDevice(int device) { return device == 0 ? cudaSuccess : cudaErrorInvalidDevice; }
FAKE_EXPORT cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* pool, int device) {
  *pool = reinterpret_cast<cudaMemPool_t>(uintptr_t{0x900});
  return device == 0 ? cudaSuccess : cudaErrorInvalidDevice;
}
FAKE_EXPORT cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t, cudaMemPoolAttr, void*) { return cudaSuccess; }
FAKE_EXPORT cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int) {
  *event = reinterpret_cast<cudaEvent_t>(g_next_event.fetch_add(0x10));
  return cudaSuccess;
}
FAKE_EXPORT cudaError_t cudaEventDestroy(cudaEvent_t) { return cudaSuccess; }
FAKE_EXPORT const char* cudaGetErrorString(cudaError_t error) {
  return error == cudaSuccess ? "no error (fake runtime)" : "error (fake runtime)";
}
