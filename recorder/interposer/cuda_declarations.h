// The CUDA headers, plus the per-thread-default-stream (_ptsz) entry points that libcudart.so and
// libcuda.so export but the headers declare only under CUDA_API_PER_THREAD_DEFAULT_STREAM.
#pragma once

// We define and take the address of deprecated entry points (cudaGetDriverEntryPoint): we wrap
// whatever programs call, deprecated or not.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

#include <cuda.h>
#include <cuda_runtime_api.h>

// cuda.h maps the name to the CUDA 12 form; we export both forms under their own names.
#undef cuGetProcAddress

extern "C" {
cudaError_t cudaMallocAsync_ptsz(void** ptr, size_t size, cudaStream_t stream);
cudaError_t cudaFreeAsync_ptsz(void* ptr, cudaStream_t stream);
cudaError_t cudaMallocFromPoolAsync_ptsz(void** ptr, size_t size, cudaMemPool_t pool, cudaStream_t stream);
cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream);
cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t event, cudaStream_t stream, unsigned int flags);
cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event, unsigned int flags);
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream);
cudaError_t cudaGetDriverEntryPoint_ptsz(const char* symbol, void** fn, unsigned long long flags,
                                         cudaDriverEntryPointQueryResult* status);
cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char* symbol, void** fn, unsigned int version,
                                                  unsigned long long flags, cudaDriverEntryPointQueryResult* status);

CUresult cuMemAllocAsync_ptsz(CUdeviceptr* ptr, size_t size, CUstream stream);
CUresult cuMemFreeAsync_ptsz(CUdeviceptr ptr, CUstream stream);
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* ptr, size_t size, CUmemoryPool pool, CUstream stream);
CUresult cuEventRecord_ptsz(CUevent event, CUstream stream);
CUresult cuEventRecordWithFlags_ptsz(CUevent event, CUstream stream, unsigned int flags);
CUresult cuStreamWaitEvent_ptsz(CUstream stream, CUevent event, unsigned int flags);
CUresult cuStreamSynchronize_ptsz(CUstream stream);
// The CUDA 11.3 form.
CUresult cuGetProcAddress(const char* symbol, void** fn, int version, cuuint64_t flags);
}
