// Freeing a chunk with coalescing, for allocators that keep their chunks in an address-ordered
// map (start -> chunk with `size` and `free`) and their free chunks in a (size, start) set:
// CoalescingRegions (BFC, RMM's pool) and the gmlake model's pieces of virtual ranges.
#pragma once

#include <cstdint>
#include <iterator>

namespace memreplay::suballoc {

// Marks the live chunk at `it` free and merges it with its free neighbours where
// `mergeable(left_start, left_chunk, right_start, right_chunk)` allows (the same region, and adjacent where the
// map may hold gaps); the merged chunk is entered in `free_by_size`. Returns its start.
template <typename ChunkMap, typename FreeSet, typename Mergeable>
uint64_t free_and_coalesce(ChunkMap& chunks, FreeSet& free_by_size, typename ChunkMap::iterator it, Mergeable mergeable) {
  const uint64_t address = it->first;
  uint64_t start = address;
  auto chunk = it->second;
  if (auto next = std::next(it);
      next != chunks.end() && next->second.free && mergeable(address, chunk, next->first, next->second)) {
    free_by_size.erase({next->second.size, next->first});
    chunk.size += next->second.size;
    chunks.erase(next);
    it = chunks.find(address);  // (btree: erasing invalidates iterators)
  }
  if (it != chunks.begin()) {
    if (auto previous = std::prev(it); previous->second.free && mergeable(previous->first, previous->second, address, chunk)) {
      free_by_size.erase({previous->second.size, previous->first});
      start = previous->first;
      chunk.size += previous->second.size;
      chunks.erase(it);
    }
  }
  chunk.free = true;
  chunks.insert_or_assign(start, chunk);
  free_by_size.emplace(chunk.size, start);
  return start;
}

}  // namespace memreplay::suballoc
