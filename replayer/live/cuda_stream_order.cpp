#include "replayer/live/cuda_stream_order.h"

#include <cstdint>

#include "replayer/cuda/cuda_try.h"

namespace memreplay {
namespace {

cudaStream_t as_stream(StreamId stream) { return reinterpret_cast<cudaStream_t>(static_cast<uintptr_t>(stream)); }

}  // namespace

CudaStreamOrder::~CudaStreamOrder() {
  for (const auto& [stream, event] : events_) (void)cudaEventDestroy(event);
}

void CudaStreamOrder::wait(StreamId waiter, StreamId producer) {
  auto [it, inserted] = events_.try_emplace(producer, nullptr);
  if (inserted) {
    const cudaError_t created = cudaEventCreateWithFlags(&it->second, cudaEventDisableTiming);
    if (created != cudaSuccess) {
      events_.erase(it);
      CUDA_TRY(created);
    }
  }
  // A producer stream destroyed since it freed the block has no work left: record fails, and the
  // whole device is synchronized instead, which is never too short.
  if (cudaEventRecord(it->second, as_stream(producer)) != cudaSuccess) {
    (void)cudaGetLastError();
    synchronize();
    return;
  }
  CUDA_TRY(cudaStreamWaitEvent(as_stream(waiter), it->second, 0));
}

void CudaStreamOrder::synchronize() { CUDA_TRY(cudaDeviceSynchronize()); }

}  // namespace memreplay
