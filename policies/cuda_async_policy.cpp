// cuda_async: PyTorch's backend:cudaMallocAsync (c10/cuda/CUDAMallocAsyncAllocator.cpp), which
// hands every request straight to the driver's stream-ordered pool:
//   allocate(n, stream) -> pool_malloc_async(n, stream) on a dedicated pool; no rounding, no
//                          splitting, no caching of our own, no retry: a failure is an OOM.
//   free(address)       -> pool_free_async, on the stream the block was allocated on (the
//                          device keeps that, with its live allocations: no map here).
//   empty_cache()       -> synchronize + cudaMemPoolTrimTo(pool, 0).
//   stream events       -> forwarded: the pool follows event dependencies for cross-stream reuse.
//   allocate in a private pool (a CUDA graph's capture) -> graph memory outside the pool (below).
// The pool's reserved/used high-water marks (ReservedMemHigh / UsedMemHigh, what PyTorch reports
// as reserved/allocated peak) are measured by the Device; stats() says to report them. The pool
// itself is real on CudaDevice and SimAsyncPool's documented model on SimDevice.
// Options (through policies/detail/policy_options.h): release_threshold:BYTES (default
// UINT64_MAX, as PyTorch sets it; units allowed, e.g. 1GiB), reuse_follow_event_dependencies,
// reuse_allow_opportunistic, reuse_allow_internal_dependencies (True|False|true|false, default
// True, the driver's defaults).
// What the simulator's pool model (replayer/sim_async_pool.h) cannot know: the driver does not
// publish its placement rules, so the model is fitted to twelve live runs (reserved peak within
// 3% or one 32 MiB chunk of each); the GPU work between allocations, which decides when a cross-stream free
// may be reused in a live run (a replay launches none, so the model treats every free as complete
// at the next allocation); the driver's late merging of freed neighbours (the real pool replaying
// the same trace reserves 4-38% more than the live run); and drivers other than those measured.
// Capacity: the Device caps what the pool reserves (as for every policy: the memory this process
// may hold). PyTorch's own check for this backend, used + n > limit, is weaker and implied by it.
#include <string>

#include <absl/container/flat_hash_set.h>

#include "policies/detail/policy_options.h"
#include "policies/registry.h"

namespace memreplay {
namespace {

class CudaAsyncPolicy final : public Policy {
 public:
  explicit CudaAsyncPolicy(Device& device) : device_(device) {}

 private:
  std::optional<Block> do_allocate(uint64_t bytes, StreamId stream) override {
    const auto address = device_.pool_malloc_async(bytes, stream);
    if (!address) return std::nullopt;
    // The pool hands out exactly what was asked for (UsedMem counts requested bytes).
    return Block{*address, bytes};
  }

  // A CUDA graph's capture. PyTorch puts what a capture allocates in the graph's private pool;
  // under backend:cudaMallocAsync those are cudaMallocAsync calls on the capturing stream, which
  // the driver serves from the graph's own memory, not from the pool: ReservedMem and UsedMem (so
  // max_memory_reserved/allocated) leave them out (measured: a job's UsedMemHigh is the requested
  // peak of its default-pool allocations alone, to the byte). Here each is a device malloc of its
  // own: the process's footprint counts it, the pool's figures do not.
  std::optional<Block> do_allocate_in_pool(uint64_t bytes, StreamId stream, PoolId pool, Capture) override {
    if (pool == 0) return do_allocate(bytes, stream);
    const auto address = device_.malloc(bytes);
    if (!address) return std::nullopt;
    graph_blocks_.insert(*address);
    return Block{*address, bytes};
  }

  // Freed on its allocation stream, as CUDAMallocAsyncAllocator does, whichever stream frees it;
  // false for an address the pool does not hold live.
  bool do_free(uint64_t address, StreamId) override {
    if (graph_blocks_.erase(address) != 0) return device_.free(address);
    return device_.pool_free_async(address);
  }

  void do_empty_cache() override { device_.pool_trim(0); }

  void do_stream_event(StreamId stream, uint64_t cuda_event, bool is_wait) override {
    device_.stream_event(stream, cuda_event, is_wait);
  }

  PolicyStats do_stats() const override {
    PolicyStats stats;
    stats.uses_device_pool = true;
    return stats;
  }

  Device& device_;
  absl::flat_hash_set<uint64_t> graph_blocks_;  // live allocations of a capture, outside the pool
};

PoolConfig parse_options(std::string_view text) {
  using detail::Booleans;
  const detail::PolicyOptions options("cuda_async", text,
                                      {"release_threshold", "reuse_follow_event_dependencies",
                                       "reuse_allow_opportunistic", "reuse_allow_internal_dependencies"});
  PoolConfig config;
  for (const auto& entry : options.entries()) {
    if (entry.key == "release_threshold")
      config.release_threshold = options.to_bytes(entry);
    else if (entry.key == "reuse_follow_event_dependencies")
      config.reuse_follow_event_dependencies = options.to_bool(entry, Booleans::either);
    else if (entry.key == "reuse_allow_opportunistic")
      config.reuse_allow_opportunistic = options.to_bool(entry, Booleans::either);
    else  // reuse_allow_internal_dependencies
      config.reuse_allow_internal_dependencies = options.to_bool(entry, Booleans::either);
  }
  return config;
}

std::unique_ptr<Policy> make_cuda_async(std::string_view options, Device& device) {
  const PoolConfig config = parse_options(options);
  if (!device.configure_pool(config))
    throw PolicySpecError("policy 'cuda_async' needs a device with a stream-ordered memory pool");
  return std::make_unique<CudaAsyncPolicy>(device);
}

}  // namespace

MEMREPLAY_REGISTER_POLICY(
    cuda_async, .name = "cuda_async",
    .description = "the driver's stream-ordered pool, as PyTorch's backend:cudaMallocAsync",
    .options_help =
        "release_threshold:BYTES (default UINT64_MAX; e.g. 0, 1GiB), reuse_follow_event_dependencies:"
        "True|False, reuse_allow_opportunistic:True|False, reuse_allow_internal_dependencies:True|False",
    .factory = make_cuda_async,
    .contract_option_sets = {"", "release_threshold:0", "release_threshold:64MiB,reuse_allow_opportunistic:false",
                             "reuse_follow_event_dependencies:False,reuse_allow_internal_dependencies:False"},
    .keeps_pools_apart = true);

}  // namespace memreplay
