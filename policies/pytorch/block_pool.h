// Blocks, segments and the free-block indexes of PyTorch's caching allocator.
//
// A segment (one cudaMalloc, or one expandable VA reservation) is a doubly linked chain of blocks
// covering it end to end, in address order:
//
//   segment  [ block | block | block ... ]      prev/next link neighbours of the same segment;
//                                               a block with neither is a whole segment.
//
// A block is allocated (handed out), free (cached: in its pool's `blocks` set), or, inside an
// expandable segment only, unmapped (VA without physical pages: in the pool's `unmapped` set).
// Invariant: Σ block sizes of a segment = segment size; two free neighbours with the same mapped
// state never coexist (free merges them).
//
// Each pool (small: rounded size <= 1 MiB, large: above) orders its free blocks by
// (stream, size, address) and its unmapped blocks by (stream, address), streams and addresses
// compared as unsigned values: lower_bound((stream, size, 0)) is best fit by size, lowest address
// among equals, same stream only. Block nodes live in an arena (pointer-stable, recycled), and live
// blocks are found by address through an open-addressing map; the free sets, the arena and the
// map are policies/detail/'s, shared with any other caching policy.
#pragma once

#include <cstdint>
#include <memory>
#include <set>

#include "policies/detail/address_map.h"
#include "policies/detail/block_arena.h"
#include "policies/detail/free_block_set.h"
#include "policies/device.h"

namespace memreplay::pytorch {

class ExpandableSegment;
struct BlockPool;

// Members in the order BlockArena::make(address, size, stream, pool) fills them.
struct CacheBlock {
  uint64_t address = 0;
  uint64_t size = 0;
  StreamId stream = 0;  // allocation stream
  BlockPool* pool = nullptr;
  uint64_t requested = 0;  // unrounded bytes of the last allocation that used this block
  CacheBlock* prev = nullptr;  // lower neighbour in the same segment
  CacheBlock* next = nullptr;  // higher neighbour in the same segment
  ExpandableSegment* segment = nullptr;  // the expandable segment it lies in, if any
  int64_t gc_count_base = 0;  // pool's get_free_block count when (re)inserted into the free set
  CacheBlock* free_prev = nullptr;  // neighbours in its free set's size bin, while in one
  CacheBlock* free_next = nullptr;
  bool allocated = false;
  bool mapped = true;  // false only for unmapped ranges of expandable segments

  bool is_split() const { return prev != nullptr || next != nullptr; }
  // Links this block into its segment's chain between `before` and `after` (either may be null),
  // as PyTorch's Block::splice.
  void splice(CacheBlock* before, CacheBlock* after) {
    if (before != nullptr) before->next = this;
    prev = before;
    if (after != nullptr) after->prev = this;
    next = after;
  }
};

using BlockArena = detail::BlockArena<CacheBlock>;
using FreeBlockSet = detail::FreeBlockSet<CacheBlock>;
using AddressMap = detail::AddressMap<CacheBlock*>;  // allocated blocks by address

// Unmapped ranges of expandable segments of one pool, ordered by (stream, address).
class UnmappedSet {
 public:
  struct Less {
    bool operator()(const CacheBlock* a, const CacheBlock* b) const {
      if (a->stream != b->stream) return a->stream < b->stream;
      return a->address < b->address;
    }
  };
  using Set = std::set<CacheBlock*, Less>;
  using iterator = Set::const_iterator;

  iterator begin() const { return set_.begin(); }
  iterator end() const { return set_.end(); }
  iterator lower_bound(StreamId stream) const {
    CacheBlock key;
    key.stream = stream;
    return set_.lower_bound(&key);
  }
  void insert(CacheBlock* block) { set_.insert(block); }
  void erase(CacheBlock* block) { set_.erase(block); }

 private:
  Set set_;
};

struct BlockPool {
  explicit BlockPool(bool small) : is_small(small) {}

  // Every insertion into `blocks` goes through here: it restarts the block's GC age.
  void insert_into_blocks(CacheBlock* block) {
    block->gc_count_base = get_free_blocks_call_count;
    blocks.insert(block);
  }

  const bool is_small;
  FreeBlockSet blocks;
  UnmappedSet unmapped;
  int64_t get_free_blocks_call_count = 0;  // counted only while GC is active
};

}  // namespace memreplay::pytorch
