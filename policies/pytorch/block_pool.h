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
// blocks are found by address through an open-addressing map.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <set>
#include <vector>

#include "policies/device.h"

namespace memreplay::pytorch {

class ExpandableSegment;
struct BlockPool;
struct CacheBlock;

// Fixed-size node storage for the free-block sets: std::set nodes come from a free list instead of
// malloc. One pool per policy, shared by the allocator copies the containers make.
class NodePool {
 public:
  NodePool() = default;
  NodePool(const NodePool&) = delete;
  NodePool& operator=(const NodePool&) = delete;

  void* take(size_t bytes) {
    if (free_ == nullptr || bytes > node_bytes_) return take_slow(bytes);
    FreeNode* node = free_;
    free_ = node->next;
    return node;
  }
  void give(void* node, size_t bytes) noexcept {
    if (bytes > node_bytes_) {
      ::operator delete(node);
      return;
    }
    free_ = new (node) FreeNode{free_};
  }

 private:
  struct FreeNode {
    FreeNode* next;
  };
  static constexpr size_t kNodesPerChunk = 512;
  void* take_slow(size_t bytes);

  size_t node_bytes_ = 0;  // set by the first request: every node of a set has one size
  std::vector<std::unique_ptr<std::byte[]>> chunks_;
  FreeNode* free_ = nullptr;  // intrusive free list through the unused nodes
};

template <class T>
class NodeAllocator {
 public:
  using value_type = T;
  explicit NodeAllocator(std::shared_ptr<NodePool> pool) : pool_(std::move(pool)) {}
  template <class U>
  NodeAllocator(const NodeAllocator<U>& other) : pool_(other.pool()) {}  // NOLINT: rebinding
  T* allocate(size_t n) {
    return static_cast<T*>(n == 1 ? pool_->take(sizeof(T)) : ::operator new(n * sizeof(T)));
  }
  void deallocate(T* p, size_t n) noexcept {
    if (n == 1) {
      pool_->give(p, sizeof(T));
    } else {
      ::operator delete(p);
    }
  }
  const std::shared_ptr<NodePool>& pool() const { return pool_; }
  template <class U>
  bool operator==(const NodeAllocator<U>& other) const { return pool_ == other.pool(); }

 private:
  std::shared_ptr<NodePool> pool_;
};

// The key of a free block, kept in the set so that comparisons never touch the block itself.
struct FreeEntry {
  StreamId stream;
  uint64_t size;
  uint64_t address;
  CacheBlock* block;
};
struct FreeEntryLess {
  bool operator()(const FreeEntry& a, const FreeEntry& b) const {
    if (a.stream != b.stream) return a.stream < b.stream;
    if (a.size != b.size) return a.size < b.size;
    return a.address < b.address;
  }
};
using FreeEntrySet = std::set<FreeEntry, FreeEntryLess, NodeAllocator<FreeEntry>>;

struct CacheBlock {
  uint64_t address = 0;
  uint64_t size = 0;
  uint64_t requested = 0;  // unrounded bytes of the last allocation that used this block
  StreamId stream = 0;     // allocation stream
  BlockPool* pool = nullptr;
  CacheBlock* prev = nullptr;  // lower neighbour in the same segment
  CacheBlock* next = nullptr;  // higher neighbour in the same segment
  ExpandableSegment* segment = nullptr;  // the expandable segment it lies in, if any
  int64_t gc_count_base = 0;  // pool's get_free_block count when (re)inserted into the free set
  FreeEntrySet::const_iterator free_entry;  // its entry while in a free set: O(1) erase
  bool allocated = false;
  bool mapped = true;  // false only for unmapped ranges of expandable segments

  bool is_split() const { return prev != nullptr || next != nullptr; }
};

// Pointer-stable storage for block nodes, recycled through a free list (linked by `next`).
class BlockArena {
 public:
  BlockArena() = default;
  BlockArena(const BlockArena&) = delete;
  BlockArena& operator=(const BlockArena&) = delete;

  CacheBlock* make(uint64_t address, uint64_t size, StreamId stream, BlockPool* pool) {
    if (free_ == nullptr) refill();
    CacheBlock* block = free_;
    free_ = block->next;
    block->address = address;
    block->size = size;
    block->requested = 0;
    block->stream = stream;
    block->pool = pool;
    block->prev = nullptr;
    block->next = nullptr;
    block->segment = nullptr;
    block->gc_count_base = 0;
    block->allocated = false;
    block->mapped = true;
    return block;
  }
  void destroy(CacheBlock* block) {
    block->next = free_;
    free_ = block;
  }

 private:
  static constexpr size_t kChunk = 1024;
  void refill();

  std::vector<std::unique_ptr<CacheBlock[]>> chunks_;
  CacheBlock* free_ = nullptr;
};

// Free (mapped) blocks of one pool, ordered by (stream, size, address).
class FreeBlockSet {
 public:
  using Entry = FreeEntry;
  using iterator = FreeEntrySet::const_iterator;

  explicit FreeBlockSet(std::shared_ptr<NodePool> nodes)
      : set_(FreeEntryLess{}, NodeAllocator<FreeEntry>(std::move(nodes))) {}

  iterator begin() const { return set_.begin(); }
  iterator end() const { return set_.end(); }
  // First block with key >= (stream, size, 0).
  iterator lower_bound(StreamId stream, uint64_t size) const {
    return set_.lower_bound(Entry{stream, size, 0, nullptr});
  }
  void insert(CacheBlock* block) {
    block->free_entry = set_.insert(Entry{block->stream, block->size, block->address, block}).first;
  }
  // `block` must be in the set: its stored position is erased without a search.
  void erase(const CacheBlock* block) { set_.erase(block->free_entry); }
  iterator erase(iterator it) { return set_.erase(it); }
  size_t size() const { return set_.size(); }
  bool empty() const { return set_.empty(); }

 private:
  FreeEntrySet set_;
};

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
  BlockPool(bool small, std::shared_ptr<NodePool> nodes) : is_small(small), blocks(std::move(nodes)) {}

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

// Live (allocated) blocks by address: open addressing, linear probing, backward-shift deletion.
class AddressMap {
 public:
  AddressMap();
  void insert(uint64_t address, CacheBlock* block);
  // Removes and returns the block at `address`, or nullptr.
  CacheBlock* take(uint64_t address);
  CacheBlock* find(uint64_t address) const;
  size_t size() const { return size_; }

 private:
  struct Slot {
    uint64_t address;  // kEmpty = no block
    CacheBlock* block;
  };
  static constexpr uint64_t kEmpty = ~0ull;  // never a block address
  size_t slot_of(uint64_t address) const;
  void grow();

  std::vector<Slot> slots_;
  size_t mask_;
  unsigned shift_;  // 64 - log2(slot count): Fibonacci hashing keeps the top bits
  size_t size_ = 0;
};

}  // namespace memreplay::pytorch
