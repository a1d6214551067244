// pytorch: a faithful model of PyTorch 2.11's native CUDA caching allocator
// (c10/cuda/CUDACachingAllocator.cpp, DeviceCachingAllocator), one device, default pools.
// pytorch@2.13: the same with the rules of a later release that its source makes clear
// (ReleaseRules; docs/pytorch-versions.md), read from source only: no ground truth for it here.
//
// allocate(n, stream):
//   s = round_size(n); pool = small (s <= 1 MiB) or large; alloc = segment_size(s)
//   1. get_free_block: best fit (stream, s) in the pool; oversize rules with max_split_size (MSS):
//      s < MSS never takes a block >= MSS; s >= MSS only takes a block < s + max_non_split_rounding
//   2. else: GC (if a limit is set and garbage_collection_threshold > 0), then the first that works:
//      alloc_block                         new segment (cudaMalloc(alloc), or expandable pages)
//      release_available_cached_blocks     (MSS set) free oversize segments of this stream+pool,
//        && alloc_block                    then try again
//      release_cached_blocks               free every whole free segment, unmap free pages,
//        && alloc_block(retry)             then a last try (num_alloc_retries += 1)
//   3. else OOM: nullopt (Policy counts num_ooms). Segments released on the way stay released.
//   4. split: small pool or expandable -> remainder >= 512; large -> s < MSS and remainder > 1 MiB.
//      The allocation takes the low-address front; the remainder stays cached.
// free(address): the block returns to its pool at once (the engine frees at free_completed) and
//   merges with free neighbours of the same segment and mapped state.
// Private pools (allocate_in_pool: a CUDA graph's pool, a torch.cuda.MemPool): PyTorch's
//   PrivatePool, its own small and large BlockPool, made at the pool's first allocation. An
//   allocation in it searches and grows only that pool (expandable segments included), and its
//   blocks return to it: blocks never cross pools. A capture or use_mem_pool is underway while it
//   allocates, so the last step of the retry ladder (release_cached_blocks) is skipped, as
//   PyTorch skips it while captures_underway is not empty; release_available_cached_blocks works
//   on the private pool. empty_cache and GC release only the default pools' segments: PyTorch
//   frees a private pool's segments only once its graphs or MemPool are gone (use_count 0). No trace
//   records that moment; release_pool() marks it (the engine calls it at the pool's first recorded
//   segment_free, which live traces have): the pool's cached segments go back at once, and from then
//   on at every release_cached_blocks, as PyTorch's graph_pools_freeable.
// Limit: alloc_block fails without a device call when reserved + alloc > allowed maximum (reserved
//   as the Device counts it: the policy keeps no byte or call counts of its own), which is
//   Device::capacity() (set_per_process_memory_fraction) or per_process_memory_fraction; GC runs
//   only under such a limit (2.11 semantics). Memory comes from the Device only, whose cap agrees:
//   an expandable segment's whole pages may end past the limit that admitted their request, as in
//   PyTorch, and the policy says so to the device (Device::admit).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "policies/policy.h"
#include "policies/policy_stats.h"
#include "policies/pytorch/alloc_config.h"
#include "policies/pytorch/block_pool.h"
#include "policies/pytorch/expandable_segment.h"
#include "policies/pytorch/size_rounding.h"

namespace memreplay::pytorch {

// The rules in which a later PyTorch release decides otherwise than 2.11 (all off: 2.11).
struct ReleaseRules {
  // 2.13 (PR #175374, malloc's retry chain at v2.13.0): the last step, release_cached_blocks and a
  // retried alloc_block, is skipped only while the allocating stream is capturing a CUDA graph,
  // not in every private pool: an allocation in a torch.cuda.MemPool (use_mem_pool) outside a
  // capture releases the cached segments and retries. Capture::unknown is read as a capture.
  bool last_step_outside_capture_only = false;
};

class CachingAllocatorPolicy final : public Policy {
 public:
  CachingAllocatorPolicy(const AllocConfig& config, Device& device, ReleaseRules rules = {});

  const CachingAllocatorStats& allocator_stats() const { return stats_; }
  const AllocConfig& config() const { return config_; }
  // The per-process limit in force (PyTorch's allowed_memory_maximum), if any.
  std::optional<uint64_t> allowed_memory_maximum() const { return allowed_max_; }
  // Whether allocate(bytes, stream) in the default pools would succeed without releasing any
  // cached memory: a free block serves it (step 1), or a new segment stays within the limit (the
  // first alloc_block of step 2). False is where PyTorch's release ladder starts (GC, then
  // release_available_cached_blocks, then release_cached_blocks and the retry). Changes nothing.
  bool fits_without_release(uint64_t bytes, StreamId stream) const;

 private:
  std::optional<Block> do_allocate(uint64_t bytes, StreamId stream) override;
  std::optional<Block> do_allocate_in_pool(uint64_t bytes, StreamId stream, PoolId pool, Capture capture) override;
  bool do_free(uint64_t address, StreamId stream) override;
  void do_empty_cache() override;
  void do_release_pool(PoolId pool) override;
  // Adopted segments are plain (cudaMalloc) segments, even under expandable_segments:True.
  std::optional<uint64_t> do_adopt_segment(uint64_t bytes, StreamId stream) override;
  std::optional<uint64_t> do_adopt_segment_in_pool(uint64_t bytes, StreamId stream, PoolId pool) override;
  std::optional<uint64_t> adopt_segment_into(uint64_t bytes, StreamId stream, BlockPool& small, BlockPool& large);
  std::optional<Block> do_adopt_block(uint64_t address, uint64_t size, uint64_t requested, StreamId stream) override;
  PolicyStats do_stats() const override;

  struct AllocParams {
    uint64_t size;  // rounded request
    StreamId stream;
    BlockPool* pool;
    uint64_t alloc_size;  // segment size for a new cudaMalloc
    bool expandable;  // expandable segments active for this request
    CacheBlock* block = nullptr;
  };

  // The steps of every allocation and free, inlined into do_allocate / do_free (measured: ~5%).
  [[gnu::always_inline]] inline bool get_free_block(AllocParams& p);
  // get_free_block's search alone: the block it would take, or blocks.end().
  [[gnu::always_inline]] inline FreeBlockSet::iterator find_free_block(const FreeBlockSet& blocks, uint64_t size,
                                                                       StreamId stream, bool expandable) const;
  bool alloc_block(AllocParams& p, bool is_retry);
  bool release_available_cached_blocks(const AllocParams& p);
  bool release_cached_blocks();
  void garbage_collect_cached_blocks();
  [[gnu::always_inline]] inline CacheBlock* alloc_found_block(const AllocParams& p, uint64_t requested, bool split);
  bool should_split(const CacheBlock* block, uint64_t size, bool expandable) const;
  [[gnu::always_inline]] inline void free_block(CacheBlock* block);
  [[gnu::always_inline]] inline uint64_t try_merge_blocks(CacheBlock* dst, CacheBlock* src, BlockPool& pool);
  void release_blocks(BlockPool& pool);
  void release_block(CacheBlock* block);

  // Expandable segments.
  CacheBlock* find_expandable_block(StreamId stream, BlockPool& pool, uint64_t size);
  bool map_block(CacheBlock* to_map, uint64_t size);
  CacheBlock* try_allocate_expandable_block(StreamId stream, BlockPool& pool, uint64_t size);
  void unmap_block(CacheBlock* block);
  void release_expandable_segment(CacheBlock* block);

  BlockPool& pool_for(uint64_t rounded) { return is_small_request(rounded) ? small_blocks_ : large_blocks_; }
  // PyTorch's PrivatePool: a pool of its own for each private pool id.
  struct PrivatePool {
    PrivatePool() : large_blocks(false), small_blocks(true) {}
    BlockPool large_blocks;
    BlockPool small_blocks;
  };
  PrivatePool& private_pool(PoolId pool);
  void record_inactive_split(int64_t blocks, int64_t bytes);

  AllocConfig config_;
  Device& device_;
  ReleaseRules rules_;
  std::optional<uint64_t> allowed_max_;
  bool gc_active_ = false;
  BlockArena arena_;
  BlockPool large_blocks_{false};
  BlockPool small_blocks_{true};
  std::map<PoolId, std::unique_ptr<PrivatePool>> private_pools_;  // by pool id, made at first use
  std::vector<PoolId> freeable_pools_;  // released (PyTorch's graph_pools_freeable), in release order
  AddressMap live_;  // allocated blocks by address
  std::vector<std::unique_ptr<ExpandableSegment>> expandable_segments_;
  CachingAllocatorStats stats_;
  uint64_t num_alloc_retries_ = 0;
};

}  // namespace memreplay::pytorch
