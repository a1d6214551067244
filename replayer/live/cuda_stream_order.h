// CudaStreamOrder: StreamOrder with CUDA events. One event per producing stream, recorded anew at
// each wait: cudaStreamWaitEvent orders the waiter after the event's latest record at the time of
// the call, so one event serves every wait (as PyTorch's allocator reuses its pooled events).
// Recording at the moment of reuse rather than at the free waits for the work queued on the
// producer by then: at least what used the block, and never less (the order is only ever longer).
// Streams are the caller's (PyTorch's) handles; 0 is the legacy default stream.
#pragma once

#include <cuda_runtime_api.h>

#include <unordered_map>

#include "replayer/live/stream_order.h"

namespace memreplay {

class CudaStreamOrder final : public StreamOrder {
 public:
  CudaStreamOrder() = default;
  ~CudaStreamOrder() override;
  CudaStreamOrder(const CudaStreamOrder&) = delete;
  CudaStreamOrder& operator=(const CudaStreamOrder&) = delete;

  void wait(StreamId waiter, StreamId producer) override;
  void synchronize() override;

 private:
  std::unordered_map<StreamId, cudaEvent_t> events_;  // producer stream -> its event
};

}  // namespace memreplay
