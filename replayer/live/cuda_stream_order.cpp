#include "replayer/live/cuda_stream_order.h"

#include <cstdint>

#include "replayer/cuda/cuda_try.h"

namespace memreplay {
namespace {

cudaStream_t as_stream(StreamId stream) { return reinterpret_cast<cudaStream_t>(static_cast<uintptr_t>(stream)); }

// The id of the graph capture `stream` takes part in, 0 when none.
unsigned long long capture_of(StreamId stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  unsigned long long id = 0;
  if (cudaStreamGetCaptureInfo(as_stream(stream), &status, &id) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return status == cudaStreamCaptureStatusActive ? id : 0;
}

}  // namespace

CudaStreamOrder::~CudaStreamOrder() {
  for (const auto& [stream, event] : events_) (void)cudaEventDestroy(event);
}

void CudaStreamOrder::wait(StreamId waiter, StreamId producer) {
  // A stream capturing a CUDA graph records work instead of running it: a wait on work outside
  // its capture would pull the other stream into the capture, or fail it. Its blocks are its
  // private pool's (policies/private_pools.h), which only the pool's graphs use, and PyTorch leaves
  // the order of replays of graphs that share a pool to the program, as here.
  if (const unsigned long long capture = capture_of(waiter); capture != 0 && capture_of(producer) != capture) return;
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
