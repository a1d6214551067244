// The pytorch policy's adoption of a trace's starting state (a trace that starts mid-run: its
// kPreexisting segments and the blocks live in them), apart from DeviceCachingAllocator's own paths
// in caching_allocator_policy.cpp: PyTorch has no such step; segments are adopted as cudaMalloc
// segments of their pool, and each block is carved out of the free block that holds it.
#include "policies/pytorch/caching_allocator_policy.h"

namespace memreplay::pytorch {

std::optional<uint64_t> CachingAllocatorPolicy::do_adopt_segment(uint64_t bytes, StreamId stream) {
  return adopt_segment_into(bytes, stream, small_blocks_, large_blocks_);
}

std::optional<uint64_t> CachingAllocatorPolicy::do_adopt_segment_in_pool(uint64_t bytes, StreamId stream, PoolId pool) {
  PrivatePool& owner = private_pool(pool);
  return adopt_segment_into(bytes, stream, owner.small_blocks, owner.large_blocks);
}

std::optional<uint64_t> CachingAllocatorPolicy::adopt_segment_into(uint64_t bytes, StreamId stream, BlockPool& small,
                                                                   BlockPool& large) {
  const auto address = device_.malloc(bytes);
  if (!address) return std::nullopt;
  // Small-pool segments are 2 MiB; large-pool ones are at least 10 MiB.
  BlockPool& pool = bytes <= kSmallBuffer ? small : large;
  stats_.segment.increase(1);
  if (bytes >= config_.max_split_size) stats_.oversize_segments.increase(1);
  pool.insert_into_blocks(arena_.make(*address, bytes, stream, &pool));
  return address;
}

std::optional<Block> CachingAllocatorPolicy::do_adopt_block(uint64_t address, uint64_t size, uint64_t requested,
                                                            StreamId stream) {
  // The free block holding [address, address + size), in whichever pool adopted its segment:
  // adoption is rare, a linear search will do.
  CacheBlock* host = nullptr;
  std::vector<BlockPool*> pools = {&small_blocks_, &large_blocks_};
  for (auto& [_, owner] : private_pools_) pools.insert(pools.end(), {&owner->small_blocks, &owner->large_blocks});
  for (BlockPool* pool : pools) {
    for (auto& entry : pool->blocks) {
      const CacheBlock* b = &entry;
      if (b->stream == stream && b->address <= address && address + size <= b->address + b->size) {
        host = &entry;
        break;
      }
    }
    if (host != nullptr) break;
  }
  if (host == nullptr || size == 0) return std::nullopt;

  BlockPool& pool = *host->pool;
  pool.blocks.erase(host);
  int64_t net_blocks = host->is_split() ? -1 : 0;
  int64_t net_bytes = host->is_split() ? -static_cast<int64_t>(host->size) : 0;
  if (address > host->address) {  // free front remainder
    CacheBlock* front = arena_.make(host->address, address - host->address, host->stream, &pool);
    front->splice(host->prev, host);
    host->address = address;
    host->size -= front->size;
    pool.insert_into_blocks(front);
    net_blocks += 1;
    net_bytes += static_cast<int64_t>(front->size);
  }
  if (host->size > size) {  // free tail remainder
    CacheBlock* tail = arena_.make(address + size, host->size - size, host->stream, &pool);
    tail->splice(host, host->next);
    host->size = size;
    pool.insert_into_blocks(tail);
    net_blocks += 1;
    net_bytes += static_cast<int64_t>(tail->size);
  }
  record_inactive_split(net_blocks, net_bytes);

  CacheBlock* block = host;
  block->allocated = true;
  block->requested = requested;
  stats_.allocation.increase(1);
  stats_.allocated_bytes.increase(size);
  stats_.active.increase(1);
  stats_.active_bytes.increase(size);
  stats_.requested_bytes.increase(requested);
  if (size >= config_.max_split_size) stats_.oversize_allocations.increase(1);
  live_.insert(address, block);
  return Block{address, size};
}

}  // namespace memreplay::pytorch
