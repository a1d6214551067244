// Free blocks of one pool, ordered by (stream, size, address), streams and addresses compared as
// unsigned values: lower_bound(stream, size) is best fit by size, lowest address among equals,
// same stream only. The key is copied into the set so that comparisons never touch the block;
// the block keeps its entry's position (`free_entry`) so that erase needs no search.
//
// Block needs: StreamId stream; uint64_t size, address; FreeEntrySet<Block>::const_iterator free_entry.
#pragma once

#include <cstdint>
#include <memory>
#include <set>

#include "policies/detail/node_pool.h"
#include "policies/device.h"

namespace memreplay::detail {

template <class Block>
struct FreeEntry {
  StreamId stream;
  uint64_t size;
  uint64_t address;
  Block* block;
};

struct FreeEntryLess {
  template <class Entry>
  bool operator()(const Entry& a, const Entry& b) const {
    if (a.stream != b.stream) return a.stream < b.stream;
    if (a.size != b.size) return a.size < b.size;
    return a.address < b.address;
  }
};

template <class Block>
using FreeEntrySet = std::set<FreeEntry<Block>, FreeEntryLess, NodeAllocator<FreeEntry<Block>>>;

template <class Block>
class FreeBlockSet {
 public:
  using Entry = FreeEntry<Block>;
  using iterator = typename FreeEntrySet<Block>::const_iterator;

  explicit FreeBlockSet(std::shared_ptr<NodePool> nodes)
      : set_(FreeEntryLess{}, NodeAllocator<Entry>(std::move(nodes))) {}

  iterator begin() const { return set_.begin(); }
  iterator end() const { return set_.end(); }
  // First block with key >= (stream, size, 0).
  iterator lower_bound(StreamId stream, uint64_t size) const {
    return set_.lower_bound(Entry{stream, size, 0, nullptr});
  }
  void insert(Block* block) {
    block->free_entry = set_.insert(Entry{block->stream, block->size, block->address, block}).first;
  }
  // `block` must be in the set: its stored position is erased without a search.
  void erase(const Block* block) { set_.erase(block->free_entry); }
  iterator erase(iterator it) { return set_.erase(it); }
  size_t size() const { return set_.size(); }
  bool empty() const { return set_.empty(); }

 private:
  FreeEntrySet<Block> set_;
};

}  // namespace memreplay::detail
