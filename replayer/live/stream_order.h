// StreamOrder: how the live allocator makes one stream's work wait for another's, so that memory
// freed with work still queued on a stream is not written by another stream before that work is
// done (stream_fences.h decides when). CudaStreamOrder does it with CUDA events; a host-ordered
// device (the simulator, the tests) has nothing queued.
#pragma once

#include "policies/device.h"

namespace memreplay {

class StreamOrder {
 public:
  virtual ~StreamOrder() = default;
  // Work queued on `waiter` from now on starts only after the work queued on `producer` so far
  // (cudaEventRecord on producer, cudaStreamWaitEvent on waiter).
  virtual void wait(StreamId waiter, StreamId producer) = 0;
  // Every stream's queued work has finished when this returns (cudaDeviceSynchronize).
  virtual void synchronize() = 0;
};

// Nothing is ever queued: a device whose memory no kernel uses (the simulator).
class HostOrder final : public StreamOrder {
 public:
  void wait(StreamId, StreamId) override {}
  void synchronize() override {}
};

}  // namespace memreplay
