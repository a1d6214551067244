// The program the interposer tests run under LD_PRELOAD, against the fake libcudart/libcuda: one
// fixed sequence of CUDA calls through every path the interposer must catch (the test lists the
// events it expects), then `threads` threads doing cudaMalloc/cudaFree pairs.
//   fake_cuda_app [threads] [pairs_per_thread]
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#undef cuGetProcAddress

namespace {

int failures = 0;

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fake_cuda_app: %s failed\n", what);
    ++failures;
  }
}

using GetProcAddress = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

template <typename Fn>
Fn lookup(GetProcAddress get_proc_address, const char* name, cuuint64_t flags = 0) {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status{};
  check(get_proc_address(name, &fn, 13000, flags, &status) == CUDA_SUCCESS && fn, name);
  return reinterpret_cast<Fn>(fn);
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 4;
  const int pairs = argc > 2 ? std::atoi(argv[2]) : 100;

  // Runtime API, through the PLT.
  check(cudaFree(nullptr) == cudaSuccess, "cudaFree(nullptr)");  // context creation idiom: no event
  void* a = nullptr;
  check(cudaMalloc(&a, 1000) == cudaSuccess, "cudaMalloc");  // 1
  void* huge = nullptr;
  check(cudaMalloc(&huge, size_t{1} << 41) == cudaErrorMemoryAllocation, "failing cudaMalloc");  // 2
  cudaStream_t s = nullptr;
  check(cudaStreamCreate(&s) == cudaSuccess, "cudaStreamCreate");  // 3
  void* c = nullptr;
  check(cudaMallocAsync(&c, 512, s) == cudaSuccess, "cudaMallocAsync");  // 4
  auto* event = reinterpret_cast<cudaEvent_t>(0xe0e0);
  check(cudaEventRecord(event, s) == cudaSuccess, "cudaEventRecord");  // 5
  check(cudaStreamWaitEvent(nullptr, event, 0) == cudaSuccess, "cudaStreamWaitEvent");  // 6
  check(cudaFreeAsync(c, s) == cudaSuccess, "cudaFreeAsync");  // 7
  check(cudaStreamSynchronize(s) == cudaSuccess, "cudaStreamSynchronize");  // 8
  check(cudaEventSynchronize(event) == cudaSuccess, "cudaEventSynchronize");  // 9
  check(cudaDeviceSynchronize() == cudaSuccess, "cudaDeviceSynchronize");  // 10
  check(cudaFree(a) == cudaSuccess, "cudaFree");  // 11
  check(cudaStreamDestroy(s) == cudaSuccess, "cudaStreamDestroy");  // 12

  // Driver API linked directly.
  CUdeviceptr d = 0;
  check(cuMemAlloc(&d, 2048) == CUDA_SUCCESS, "cuMemAlloc");  // 13
  check(cuMemFree(d) == CUDA_SUCCESS, "cuMemFree");  // 14

  // Driver API found at run time: dlsym on the library, then cuGetProcAddress.
  void* libcuda = dlopen("libcuda.so.1", RTLD_NOW);
  check(libcuda != nullptr, "dlopen libcuda");
  auto mem_alloc = reinterpret_cast<decltype(&cuMemAlloc_v2)>(dlsym(libcuda, "cuMemAlloc_v2"));
  check(mem_alloc && mem_alloc(&d, 4096) == CUDA_SUCCESS, "dlsym'd cuMemAlloc_v2");  // 15
  auto get_proc_address = reinterpret_cast<GetProcAddress>(dlsym(libcuda, "cuGetProcAddress_v2"));
  check(get_proc_address != nullptr, "dlsym cuGetProcAddress_v2");
  if (get_proc_address) {
    auto reserve = lookup<decltype(&cuMemAddressReserve)>(get_proc_address, "cuMemAddressReserve");
    auto create = lookup<decltype(&cuMemCreate)>(get_proc_address, "cuMemCreate");
    auto map = lookup<decltype(&cuMemMap)>(get_proc_address, "cuMemMap");
    auto unmap = lookup<decltype(&cuMemUnmap)>(get_proc_address, "cuMemUnmap");
    auto release = lookup<decltype(&cuMemRelease)>(get_proc_address, "cuMemRelease");
    auto address_free = lookup<decltype(&cuMemAddressFree)>(get_proc_address, "cuMemAddressFree");
    auto mem_free = lookup<decltype(&cuMemFree_v2)>(get_proc_address, "cuMemFree");
    auto sync_ptsz = lookup<decltype(&cuStreamSynchronize)>(get_proc_address, "cuStreamSynchronize",
                                                            CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    CUdeviceptr va = 0;
    CUmemGenericAllocationHandle handle = 0;
    const size_t page = size_t{2} << 20;
    check(reserve && reserve(&va, 4 * page, 0, 0, 0) == CUDA_SUCCESS, "cuMemAddressReserve");  // 16
    check(create && create(&handle, page, nullptr, 0) == CUDA_SUCCESS, "cuMemCreate");  // 17
    check(map && map(va, page, 0, handle, 0) == CUDA_SUCCESS, "cuMemMap");  // 18
    check(unmap && unmap(va, page) == CUDA_SUCCESS, "cuMemUnmap");  // 19
    check(release && release(handle) == CUDA_SUCCESS, "cuMemRelease");  // 20
    check(address_free && address_free(va, 4 * page) == CUDA_SUCCESS, "cuMemAddressFree");  // 21
    check(mem_free && mem_free(d) == CUDA_SUCCESS, "cuMemFree via cuGetProcAddress");  // 22
    check(sync_ptsz && sync_ptsz(nullptr) == CUDA_SUCCESS, "cuStreamSynchronize_ptsz");  // 23
  }

  // Many threads at once.
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([t, pairs] {
      for (int i = 0; i < pairs; ++i) {
        void* p = nullptr;
        check(cudaMalloc(&p, 4096 + static_cast<size_t>(t)) == cudaSuccess, "thread cudaMalloc");
        check(cudaFree(p) == cudaSuccess, "thread cudaFree");
      }
    });
  for (auto& w : workers) w.join();
  std::printf("fake_cuda_app: done, %d failures\n", failures);
  return failures == 0 ? 0 : 1;
}
