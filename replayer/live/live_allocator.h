// LiveAllocator: a registered policy serving a running job's allocations on a real device: the
// replay engine's role (replay_session.h) with requests from the job instead of a trace.
//   allocate(bytes, stream[, pool])  policy.allocate(_in_pool); the block, if it overlaps memory
//                                    freed with work pending on other streams, makes `stream`
//                                    wait for that work first (stream_fences.h, stream_order.h)
//   free(address)                    policy.free(address, its allocation stream) at once; the
//                                    block stays fenced by that stream and by every stream
//                                    record_stream() named
//   empty_cache()                    synchronize, then policy.empty_cache()
// Because a free reaches the policy when the job frees, a trace of alloc/free/empty_cache events
// (AllocationObserver) replays on the simulator to the same decisions: the same reserved peak and
// device calls.
// Thread-safe: one mutex around the policy, the device and the bookkeeping (autograd allocates and
// frees from its own threads). Measurement stays here and in the Device, as in the replay engine:
// allocated and requested bytes are counted from what the policy hands out.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "policies/device.h"
#include "policies/policy.h"
#include "policies/policy_stats.h"
#include "replayer/live/allocation_observer.h"
#include "replayer/live/stream_fences.h"
#include "replayer/live/stream_order.h"

namespace memreplay {

class LiveAllocator {
 public:
  // `policy_spec` as the CLI's --policy takes it (a registered name with options; plugins must be
  // registered first). Throws PolicySpecError for a bad spec. `observer` may be null.
  LiveAllocator(std::unique_ptr<Device> device, std::string_view policy_spec, std::unique_ptr<StreamOrder> order,
                AllocationObserver* observer = nullptr);

  // The address of a block of at least `bytes` (> 0) for use on `stream`; nullopt when the policy
  // is out of memory (oom_message() says why, with the policy's numbers).
  std::optional<uint64_t> allocate(uint64_t bytes, StreamId stream, PoolId pool = 0);
  // False for an address this allocator did not hand out (or took back already).
  bool free(uint64_t address);
  // torch's Tensor.record_stream: `stream` uses the block too; its free waits for that stream's work.
  bool record_stream(uint64_t address, StreamId stream);
  void empty_cache();
  // Private pool `pool` is PyTorch's `torch_id` of `kind` (AllocationObserver::on_name_pool): for
  // the run's trace, before the pool's first allocation.
  void name_pool(PoolId pool, std::pair<uint64_t, uint64_t> torch_id, std::string_view kind);
  // A private pool (a CUDA graph's or a MemPool's) is gone: its cached memory may go back.
  void release_pool(PoolId pool);

  // torch.cuda.memory_stats()-style figures: allocated/requested bytes and allocation counts
  // measured here, reserved bytes and device calls from the device, retries and OOMs from the policy.
  std::map<std::string, uint64_t> stats() const;
  DeviceCounters device_counters() const;
  // The message of the last OOM: the request, the policy's reserved and allocated bytes, the device.
  std::string oom_message() const;
  const std::string& policy_spec() const { return policy_spec_; }
  uint64_t total_memory() const { return device_->total_memory(); }
  // Whether any block was ever handed out (a capacity can be set only before).
  bool used() const;

 private:
  struct LiveBlock {
    uint64_t size;  // as the policy handed it out
    uint64_t requested;
    StreamId stream;
    PoolId pool;
    std::vector<StreamId> other_streams;  // record_stream()
  };
  struct Measured {
    Stat allocated_bytes, requested_bytes, allocation;
  };

  std::string describe_oom(uint64_t bytes) const;

  mutable std::mutex mutex_;
  std::unique_ptr<Device> device_;
  std::unique_ptr<StreamOrder> order_;
  std::unique_ptr<Policy> policy_;
  std::string policy_spec_;
  AllocationObserver* observer_;
  std::unordered_map<uint64_t, LiveBlock> live_;
  StreamFences fences_;
  Measured measured_;
  uint64_t handed_out_ = 0;
  uint64_t cross_stream_waits_ = 0;
  std::string oom_message_;
};

}  // namespace memreplay
