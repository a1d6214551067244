// What the live allocator reports of the job's requests, in the order its policy saw them: what a
// trace of the run needs so that a simulator replay with the same policy makes the same decisions
// (live_trace.h writes them). Called under the allocator's lock, so the order is the policy's.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>

#include "policies/device.h"
#include "policies/policy.h"

namespace memreplay {

class AllocationObserver {
 public:
  virtual ~AllocationObserver() = default;
  // `requested` bytes were handed out at `address` for `stream`, in private pool `pool` (0: none).
  virtual void on_alloc(uint64_t address, uint64_t requested, StreamId stream, PoolId pool) = 0;
  // The block at `address` went back to the policy, which may hand it out again from now on.
  virtual void on_free(uint64_t address, uint64_t requested, StreamId stream, PoolId pool) = 0;
  virtual void on_empty_cache() = 0;
  // Private pool `pool` is PyTorch's pool `torch_id` (its MempoolId_t), of `kind` ("graph": a
  // capture's own pool; "mempool": a MemPool's or graph_pool_handle()'s), announced before its
  // first allocation.
  virtual void on_name_pool(PoolId pool, std::pair<uint64_t, uint64_t> torch_id, std::string_view kind) = 0;
  // Private pool `pool` was released (its CUDA graphs destroyed): its memory may go back.
  virtual void on_release_pool(PoolId pool) = 0;
  // A request of `requested` bytes the policy could not serve; `free_bytes` as the device had them.
  virtual void on_oom(uint64_t requested, StreamId stream, uint64_t free_bytes) = 0;
};

}  // namespace memreplay
