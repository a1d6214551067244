// The pytorch policy: DeviceCachingAllocator's malloc / free / release paths, function by function
// (same names as in CUDACachingAllocator.cpp); the decision sequence is summarised in the header.
#include "policies/pytorch/caching_allocator_policy.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "policies/pytorch/size_rounding.h"
#include "policies/registry.h"

namespace memreplay::pytorch {
namespace {

uint64_t saturating_add(uint64_t a, uint64_t b) {
  return a > std::numeric_limits<uint64_t>::max() - b ? std::numeric_limits<uint64_t>::max() : a + b;
}

}  // namespace

CachingAllocatorPolicy::CachingAllocatorPolicy(const AllocConfig& config, Device& device, ReleaseRules rules)
    : config_(config), device_(device), rules_(rules) {
  // set_per_process_memory_fraction(f): a limit only when f < 1 (2.11). The device's capacity is
  // that call; without one, the per_process_memory_fraction option sets it.
  const uint64_t total = device.total_memory();
  if (const auto capacity = device.capacity(); capacity && *capacity < total) {
    allowed_max_ = *capacity;
  } else if (config.per_process_memory_fraction < 1.0) {
    allowed_max_ = static_cast<uint64_t>(config.per_process_memory_fraction * static_cast<double>(total));
  }
  gc_active_ = allowed_max_.has_value() && config.garbage_collection_threshold > 0.0;
}

std::optional<Block> CachingAllocatorPolicy::do_allocate(uint64_t bytes, StreamId stream) {
  const uint64_t size = round_size(bytes, config_);
  AllocParams p{size, stream, &pool_for(size), segment_size(size, config_), config_.expandable_segments};

  // No free-memory callbacks report progress in a single process, so no second search.
  bool found = get_free_block(p);
  if (!found) {
    if (gc_active_) garbage_collect_cached_blocks();
    found = alloc_block(p, false) || (release_available_cached_blocks(p) && alloc_block(p, false)) ||
            (release_cached_blocks() && alloc_block(p, true));
  }
  if (!found) return std::nullopt;
  CacheBlock* block = alloc_found_block(p, bytes, should_split(p.block, size, p.expandable));
  live_.insert(block->address, block);
  return Block{block->address, block->size};
}

CachingAllocatorPolicy::PrivatePool& CachingAllocatorPolicy::private_pool(PoolId pool) {
  auto& slot = private_pools_[pool];
  if (!slot) slot = std::make_unique<PrivatePool>();
  return *slot;
}

// do_allocate in a private pool (its header comment): the same ladder on that pool's BlockPools,
// without the release_cached_blocks step, which PyTorch 2.11 skips while a capture or a MemPool
// scope is underway, and 2.13 only while the stream is capturing (ReleaseRules).
std::optional<Block> CachingAllocatorPolicy::do_allocate_in_pool(uint64_t bytes, StreamId stream, PoolId pool,
                                                                 Capture capture) {
  const uint64_t size = round_size(bytes, config_);
  PrivatePool& owner = private_pool(pool);
  BlockPool& blocks = is_small_request(size) ? owner.small_blocks : owner.large_blocks;
  AllocParams p{size, stream, &blocks, segment_size(size, config_), config_.expandable_segments};
  bool found = get_free_block(p);
  if (!found) {
    if (gc_active_) garbage_collect_cached_blocks();
    const bool last_step = rules_.last_step_outside_capture_only && capture == Capture::not_capturing;
    found = alloc_block(p, false) || (release_available_cached_blocks(p) && alloc_block(p, false)) ||
            (last_step && release_cached_blocks() && alloc_block(p, true));
  }
  if (!found) return std::nullopt;
  CacheBlock* block = alloc_found_block(p, bytes, should_split(p.block, size, p.expandable));
  live_.insert(block->address, block);
  return Block{block->address, block->size};
}

bool CachingAllocatorPolicy::do_free(uint64_t address, StreamId) {
  // The block returns to the pool of its allocation stream, whichever stream frees it (as PyTorch).
  const std::optional<CacheBlock*> taken = live_.take(address);
  if (!taken) return false;
  CacheBlock* block = *taken;
  block->allocated = false;
  stats_.allocation.decrease(1);
  stats_.allocated_bytes.decrease(block->size);
  if (block->size >= config_.max_split_size) stats_.oversize_allocations.decrease(1);
  free_block(block);
  return true;
}

void CachingAllocatorPolicy::do_empty_cache() { release_cached_blocks(); }

void CachingAllocatorPolicy::do_release_pool(PoolId pool) {
  if (std::find(freeable_pools_.begin(), freeable_pools_.end(), pool) == freeable_pools_.end())
    freeable_pools_.push_back(pool);
  PrivatePool& owner = private_pool(pool);
  release_blocks(owner.small_blocks);
  release_blocks(owner.large_blocks);
}

PolicyStats CachingAllocatorPolicy::do_stats() const {
  PolicyStats stats;
  stats.alloc_retries = num_alloc_retries_;
  stats.caching = stats_;
  return stats;
}

// ---- the search ---------------------------------------------------------------------------------

FreeBlockSet::iterator CachingAllocatorPolicy::find_free_block(const FreeBlockSet& blocks, uint64_t size,
                                                               StreamId stream, bool expandable) const {
  auto it = blocks.lower_bound(stream, size);
  if (it == blocks.end() || it->stream != stream) return blocks.end();

  if (it->segment != nullptr) {
    if (expandable) {
      // Best fit by the size a block could grow to: a block followed by unmapped VA (a segment's
      // tail) counts that VA, so a later block that stays smaller is preferred.
      auto expandable_size = [](const CacheBlock* b) {
        return b->size + (b->next != nullptr && !b->next->mapped ? b->next->size : 0);
      };
      auto next = std::next(it);
      while (it->segment != nullptr && next != blocks.end() && next->stream == stream &&
             expandable_size(&*next) < expandable_size(&*it)) {
        it = next++;
      }
    } else {
      // Expandable segments switched off: skip their blocks.
      do {
        ++it;
      } while (it != blocks.end() && it->segment != nullptr && it->stream == stream);
      if (it == blocks.end() || it->stream != stream) return blocks.end();
    }
  }

  // Oversize rules: never hand an oversize block to a normal request; an oversize request takes a
  // block only within max_non_split_rounding of its size.
  const uint64_t max_split = config_.max_split_size;
  if (size < max_split && it->size >= max_split) return blocks.end();
  if (size >= max_split && it->size >= saturating_add(size, config_.max_non_split_rounding_size)) return blocks.end();
  return it;
}

bool CachingAllocatorPolicy::get_free_block(AllocParams& p) {
  if (gc_active_) ++p.pool->get_free_blocks_call_count;  // block ages count these calls
  FreeBlockSet& blocks = p.pool->blocks;
  const auto it = find_free_block(blocks, p.size, p.stream, p.expandable);
  if (it == blocks.end()) return false;
  p.block = &*it;
  blocks.erase(it);
  return true;
}

bool CachingAllocatorPolicy::fits_without_release(uint64_t bytes, StreamId stream) const {
  const uint64_t size = round_size(bytes, config_);
  const BlockPool& pool = is_small_request(size) ? small_blocks_ : large_blocks_;
  if (find_free_block(pool.blocks, size, stream, config_.expandable_segments) != pool.blocks.end()) return true;
  // alloc_block's limit, or the device's own where none is set.
  const uint64_t limit = allowed_max_ ? *allowed_max_ : device_.limit();
  return device_.counters().reserved_bytes + segment_size(size, config_) <= limit;
}

bool CachingAllocatorPolicy::should_split(const CacheBlock* block, uint64_t size, bool expandable) const {
  const uint64_t remaining = block->size - size;
  if (block->pool->is_small || expandable) return remaining >= kMinBlockSize;
  return size < config_.max_split_size && remaining > kSmallSize;
}

CacheBlock* CachingAllocatorPolicy::alloc_found_block(const AllocParams& p, uint64_t requested, bool split) {
  CacheBlock* block = p.block;
  BlockPool& pool = *p.pool;
  const bool already_split = block->is_split();
  if (split) {
    // The allocation takes the front; the old node keeps the high-address remainder.
    CacheBlock* remaining = block;
    block = arena_.make(remaining->address, p.size, p.stream, &pool);
    block->segment = remaining->segment;
    block->splice(remaining->prev, remaining);
    remaining->address += p.size;
    remaining->size -= p.size;
    pool.insert_into_blocks(remaining);
    if (block->segment == nullptr) {
      if (already_split) {
        stats_.inactive_split_bytes.decrease(block->size);
      } else {
        stats_.inactive_split_bytes.increase(remaining->size);
        stats_.inactive_split.increase(1);
      }
    }
  } else if (already_split && block->segment == nullptr) {
    stats_.inactive_split_bytes.decrease(block->size);
    stats_.inactive_split.decrease(1);
  }

  block->allocated = true;
  block->requested = requested;
  stats_.allocation.increase(1);
  stats_.allocated_bytes.increase(block->size);
  stats_.active.increase(1);
  stats_.active_bytes.increase(block->size);
  stats_.requested_bytes.increase(requested);
  if (block->size >= config_.max_split_size) stats_.oversize_allocations.increase(1);
  return block;
}

// ---- getting memory from the device -------------------------------------------------------------

bool CachingAllocatorPolicy::alloc_block(AllocParams& p, bool is_retry) {
  if (is_retry) ++num_alloc_retries_;
  // The limit is checked against the segment size, on the expandable path too.
  if (allowed_max_ && device_.counters().reserved_bytes + p.alloc_size > *allowed_max_) return false;
  if (p.expandable) {
    // Its whole pages may end past the cap, as in PyTorch: the device honours what the limit admitted.
    (void)device_.admit(p.alloc_size);
    p.block = try_allocate_expandable_block(p.stream, *p.pool, p.size);
    return p.block != nullptr;
  }
  const auto address = device_.malloc(p.alloc_size);
  if (!address) return false;
  p.block = arena_.make(*address, p.alloc_size, p.stream, p.pool);
  stats_.segment.increase(1);
  if (p.alloc_size >= config_.max_split_size) stats_.oversize_segments.increase(1);
  return true;
}

// ---- giving memory back -------------------------------------------------------------------------

void CachingAllocatorPolicy::free_block(CacheBlock* block) {
  const uint64_t original_size = block->size;
  const uint64_t requested = block->requested;
  BlockPool& pool = *block->pool;
  int64_t net_blocks = 0;
  int64_t net_bytes = 0;
  for (CacheBlock* candidate : {block->prev, block->next}) {
    const uint64_t subsumed = try_merge_blocks(block, candidate, pool);
    if (subsumed > 0) {
      net_blocks -= 1;
      net_bytes -= static_cast<int64_t>(subsumed);
    }
  }
  pool.insert_into_blocks(block);
  if (block->is_split()) {
    net_blocks += 1;
    net_bytes += static_cast<int64_t>(block->size);
  }
  // inactive_split leaves expandable segments out: their free pages can always be released.
  if (block->segment == nullptr) record_inactive_split(net_blocks, net_bytes);
  stats_.active.decrease(1);
  stats_.active_bytes.decrease(original_size);
  stats_.requested_bytes.decrease(requested);
}

uint64_t CachingAllocatorPolicy::try_merge_blocks(CacheBlock* dst, CacheBlock* src, BlockPool& pool) {
  if (src == nullptr || src->allocated || dst->mapped != src->mapped) return 0;
  if (dst->prev == src) {  // [src dst]
    dst->address = src->address;
    dst->prev = src->prev;
    if (dst->prev != nullptr) dst->prev->next = dst;
  } else {  // [dst src]
    dst->next = src->next;
    if (dst->next != nullptr) dst->next->prev = dst;
  }
  const uint64_t subsumed = src->size;
  dst->size += subsumed;
  if (src->mapped) {
    pool.blocks.erase(src);
  } else {
    pool.unmapped.erase(src);
  }
  arena_.destroy(src);
  return subsumed;
}

void CachingAllocatorPolicy::record_inactive_split(int64_t blocks, int64_t bytes) {
  if (blocks > 0) stats_.inactive_split.increase(static_cast<uint64_t>(blocks));
  if (blocks < 0) stats_.inactive_split.decrease(static_cast<uint64_t>(-blocks));
  if (bytes > 0) stats_.inactive_split_bytes.increase(static_cast<uint64_t>(bytes));
  if (bytes < 0) stats_.inactive_split_bytes.decrease(static_cast<uint64_t>(-bytes));
}

void CachingAllocatorPolicy::release_block(CacheBlock* block) {
  free_held(device_, block->address);
  stats_.segment.decrease(1);
  if (block->size >= config_.max_split_size) stats_.oversize_segments.decrease(1);
  block->pool->blocks.erase(block);
  arena_.destroy(block);
}

// Oversize free blocks are whole segments under PyTorch's max_split_size. A split one can only be
// adopted from a trace's starting state (recorded under another max_split_size): passed over.
bool CachingAllocatorPolicy::release_available_cached_blocks(const AllocParams& p) {
  const uint64_t max_split = config_.max_split_size;
  if (max_split == std::numeric_limits<uint64_t>::max()) return false;
  FreeBlockSet& blocks = p.pool->blocks;
  const uint64_t key_size = std::max(p.size, max_split);
  const auto releasable = [](const CacheBlock& b) { return b.segment == nullptr && !b.is_split(); };
  auto it = blocks.lower_bound(p.stream, key_size);
  auto whole = it;
  while (whole != blocks.end() && whole->stream == p.stream && whole->segment == nullptr && whole->is_split()) ++whole;
  if (whole != blocks.end() && whole->stream == p.stream && releasable(*whole)) {
    release_block(&*whole);  // one oversize segment big enough
    return true;
  }
  // Otherwise free oversize segments of this stream from the largest down until key_size bytes
  // (those freed stay freed even when they fall short).
  if (it == blocks.begin()) return false;
  std::vector<CacheBlock*> victims;
  uint64_t released = 0;
  --it;
  while (released < key_size && it->size >= max_split && it->stream == p.stream) {
    if (releasable(*it)) {
      victims.push_back(&*it);
      released += it->size;
    }
    if (it == blocks.begin()) break;
    --it;
  }
  for (CacheBlock* block : victims) release_block(block);
  return released >= key_size;
}

bool CachingAllocatorPolicy::release_cached_blocks() {
  ++stats_.num_sync_all_streams;  // synchronize_and_free_events: no pending events here
  release_blocks(large_blocks_);
  release_blocks(small_blocks_);
  for (const PoolId pool : freeable_pools_) {  // then the released private pools, small first
    PrivatePool& owner = private_pool(pool);
    release_blocks(owner.small_blocks);
    release_blocks(owner.large_blocks);
  }
  return true;
}

void CachingAllocatorPolicy::release_blocks(BlockPool& pool) {
  // Walk first, act after: releasing and unmapping change the set.
  std::vector<CacheBlock*> to_release;
  std::vector<CacheBlock*> to_unmap;
  for (auto& entry : pool.blocks) {
    if (entry.segment != nullptr) {
      to_unmap.push_back(&entry);
    } else if (!entry.is_split()) {
      to_release.push_back(&entry);
    }
  }
  for (CacheBlock* block : to_release) release_block(block);
  for (CacheBlock* block : to_unmap) {
    unmap_block(block);
    if (!block->is_split()) release_expandable_segment(block);
  }
}

void CachingAllocatorPolicy::garbage_collect_cached_blocks() {
  const auto gc_threshold =
      static_cast<uint64_t>(config_.garbage_collection_threshold * static_cast<double>(*allowed_max_));
  const uint64_t reserved = device_.counters().reserved_bytes;
  if (reserved <= gc_threshold) return;
  const uint64_t target = reserved - gc_threshold;
  BlockPool& pool = large_blocks_;
  auto age = [&pool](const CacheBlock* block) {
    return static_cast<uint64_t>(pool.get_free_blocks_call_count - block->gc_count_base);
  };

  uint64_t total_age = 0;
  int64_t freeable = 0;
  for (auto& entry : pool.blocks) {
    if (!entry.is_split()) {
      total_age += age(&entry);
      ++freeable;
    }
  }
  if (freeable == 0) return;

  // Free every whole free segment at least as old as the mean, repeating until the target is met
  // or a pass frees nothing.
  uint64_t reclaimed = 0;
  bool freed = true;
  std::vector<CacheBlock*> victims;
  while (reclaimed < target && freed && freeable > 0) {
    const double age_threshold = static_cast<double>(total_age) / static_cast<double>(freeable);
    // One pass in set order; the threshold is fixed for the pass, so collect, then release.
    victims.clear();
    for (auto& entry : pool.blocks) {
      const CacheBlock* block = &entry;
      if (!block->is_split() && block->segment == nullptr && static_cast<double>(age(block)) >= age_threshold)
        victims.push_back(&entry);
    }
    freed = !victims.empty();
    for (CacheBlock* block : victims) {
      reclaimed += block->size;
      total_age -= age(block);
      --freeable;
      release_block(block);
    }
  }
}

// ---- expandable segments ------------------------------------------------------------------------

CacheBlock* CachingAllocatorPolicy::find_expandable_block(StreamId stream, BlockPool& pool, uint64_t size) {
  auto allocatable = [](const CacheBlock* b) { return b != nullptr && !b->allocated; };
  auto has_room = [&](const CacheBlock* b) {
    uint64_t bytes = 0;
    for (; bytes < size && allocatable(b); b = b->next) bytes += b->size;
    return bytes >= size;
  };
  // The lowest address (over this stream's segments of the pool) where free and unmapped blocks
  // together fit `size`, starting from a free block just before an unmapped range if there is one.
  for (auto it = pool.unmapped.lower_bound(stream); it != pool.unmapped.end() && (*it)->stream == stream; ++it) {
    CacheBlock* candidate = *it;
    if (allocatable(candidate->prev)) candidate = candidate->prev;
    if (has_room(candidate)) return candidate;
  }
  const uint64_t page = pool.is_small ? kSmallBuffer : config_.large_segment_size;
  auto segment = std::make_unique<ExpandableSegment>(device_, stream, page);
  if (!segment->valid()) return nullptr;
  CacheBlock* candidate = arena_.make(segment->base(), segment->size(), stream, &pool);
  candidate->mapped = false;
  candidate->segment = segment.get();
  pool.unmapped.insert(candidate);
  expandable_segments_.push_back(std::move(segment));
  return candidate;
}

bool CachingAllocatorPolicy::map_block(CacheBlock* to_map, uint64_t size) {
  const SegmentRange mapped = to_map->segment->map(SegmentRange{to_map->address, size});
  if (mapped.size == 0) return false;
  BlockPool& pool = *to_map->pool;
  pool.unmapped.erase(to_map);
  to_map->mapped = true;
  if (mapped.size < to_map->size) {
    // to_map -> remaining (still unmapped) -> to_map->next
    CacheBlock* remaining =
        arena_.make(to_map->address + mapped.size, to_map->size - mapped.size, to_map->stream, &pool);
    remaining->mapped = false;
    remaining->segment = to_map->segment;
    remaining->splice(to_map, to_map->next);
    pool.unmapped.insert(remaining);
    to_map->size = mapped.size;
  }
  try_merge_blocks(to_map, to_map->prev, pool);
  try_merge_blocks(to_map, to_map->next, pool);
  pool.insert_into_blocks(to_map);
  return true;
}

CacheBlock* CachingAllocatorPolicy::try_allocate_expandable_block(StreamId stream, BlockPool& pool, uint64_t size) {
  // The candidate starts a run of free/unmapped blocks with room for `size`:
  //   unmapped -> end | unmapped -> free -> ... | free -> unmapped -> ...
  CacheBlock* candidate = find_expandable_block(stream, pool, size);
  if (candidate == nullptr) return nullptr;
  if (!candidate->mapped && !map_block(candidate, std::min(candidate->size, size))) return nullptr;
  while (candidate->size < size) {
    // free -> unmapped: map what is missing; the new range merges with the candidate.
    CacheBlock* next = candidate->next;
    if (!map_block(next, std::min(size - candidate->size, next->size))) return nullptr;
    candidate = next;
  }
  pool.blocks.erase(candidate);
  return candidate;
}

void CachingAllocatorPolicy::unmap_block(CacheBlock* block) {
  const SegmentRange unmapped = block->segment->unmap(SegmentRange{block->address, block->size});
  if (unmapped.size == 0) return;
  BlockPool& pool = *block->pool;
  pool.blocks.erase(block);

  // Partial pages at either end stay mapped as free blocks.
  const uint64_t before = unmapped.address - block->address;
  if (before > 0) {
    CacheBlock* before_free = arena_.make(block->address, before, block->stream, &pool);
    before_free->segment = block->segment;
    before_free->splice(block->prev, block);
    pool.insert_into_blocks(before_free);
  }
  const uint64_t after = block->size - (before + unmapped.size);
  if (after > 0) {
    CacheBlock* after_free = arena_.make(unmapped.address + unmapped.size, after, block->stream, &pool);
    after_free->segment = block->segment;
    after_free->splice(block, block->next);
    pool.insert_into_blocks(after_free);
  }
  block->address = unmapped.address;
  block->size = unmapped.size;
  block->mapped = false;
  try_merge_blocks(block, block->prev, pool);
  try_merge_blocks(block, block->next, pool);
  pool.unmapped.insert(block);
}

void CachingAllocatorPolicy::release_expandable_segment(CacheBlock* block) {
  block->pool->unmapped.erase(block);
  const auto it = std::find_if(expandable_segments_.begin(), expandable_segments_.end(),
                               [&](const auto& segment) { return segment.get() == block->segment; });
  if (it != expandable_segments_.end()) {
    (*it)->release();
    expandable_segments_.erase(it);
  }
  arena_.destroy(block);
}

namespace {

std::unique_ptr<Policy> make_pytorch(std::string_view options, Device& device) {
  return std::make_unique<CachingAllocatorPolicy>(parse_alloc_config(options), device);
}

std::unique_ptr<Policy> make_pytorch_2_13(std::string_view options, Device& device) {
  return std::make_unique<CachingAllocatorPolicy>(parse_alloc_config(options), device,
                                                  ReleaseRules{.last_step_outside_capture_only = true});
}

constexpr const char* kOptionsHelp =
    "as PYTORCH_CUDA_ALLOC_CONF: max_split_size_mb:N, max_non_split_rounding_mb:N, "
    "large_segment_size_mb:N, roundup_power2_divisions:N|[256:1,512:2,>:8], "
    "garbage_collection_threshold:F, expandable_segments:True|False, "
    "per_process_memory_fraction:F (e.g. pytorch:expandable_segments:True)";

// The contract suite covers every option family (rounding, oversize, GC, expandable) and mixes.
std::vector<std::string> contract_option_sets() {
  return {"",
          "expandable_segments:True",
          "max_split_size_mb:20",
          "max_split_size_mb:64,max_non_split_rounding_mb:30",
          "roundup_power2_divisions:4",
          "roundup_power2_divisions:[1:1,2:2,4:4,>:8]",
          "large_segment_size_mb:40",
          "garbage_collection_threshold:0.5,per_process_memory_fraction:0.9",
          "expandable_segments:True,roundup_power2_divisions:2,max_split_size_mb:24",
          "expandable_segments:True,garbage_collection_threshold:0.6"};
}

}  // namespace

MEMREPLAY_REGISTER_POLICY(
    pytorch, .name = "pytorch",
    .description =
        "PyTorch 2.11's native CUDA caching allocator (CUDACachingAllocator.cpp), byte-exact against "
        "real H200 PyTorch 2.11 traces",
    .options_help = kOptionsHelp, .factory = make_pytorch, .contract_option_sets = contract_option_sets(),
    .models_torch_version = "2.11", .keeps_pools_apart = true);

// 2.11's model with the rules 2.13's source makes clear (ReleaseRules), the same contract.
MEMREPLAY_REGISTER_POLICY(
    pytorch_2_13, .name = "pytorch@2.13",
    .description =
        "PyTorch 2.13's caching allocator as read from its source, no ground truth here: 2.11's model, "
        "and a MemPool's allocation outside a graph capture may release the cache and retry "
        "(docs/pytorch-versions.md)",
    .options_help = kOptionsHelp, .factory = make_pytorch_2_13, .contract_option_sets = contract_option_sets(),
    .models_torch_version = "2.13", .decides_by_capture = true, .keeps_pools_apart = true);

}  // namespace memreplay::pytorch
