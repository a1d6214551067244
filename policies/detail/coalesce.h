// Freeing a chunk with coalescing, for allocators that keep their chunks in an address-ordered
// map (start -> chunk with `size` and `free`) and their free chunks in a (size, start) set:
// the gmlake model's pieces of virtual ranges.
#pragma once

#include <cstdint>
#include <iterator>
#include <utility>

namespace memreplay::suballoc {

// Marks the live chunk at `it` free and merges it with its free neighbours where
// `mergeable(left_start, left_chunk, right_start, right_chunk)` allows (the same region, and adjacent where the
// map may hold gaps); the merged chunk is entered in `free_by_size`, under `key(start, chunk)`
// (by default (size, start)). Returns its start.
template <typename ChunkMap, typename FreeSet, typename Mergeable, typename Key>
uint64_t free_and_coalesce(ChunkMap& chunks, FreeSet& free_by_size, typename ChunkMap::iterator it, Mergeable mergeable,
                           Key key) {
  const uint64_t address = it->first;
  uint64_t start = address;
  auto chunk = it->second;
  if (auto next = std::next(it);
      next != chunks.end() && next->second.free && mergeable(address, chunk, next->first, next->second)) {
    free_by_size.erase(key(next->first, next->second));
    chunk.size += next->second.size;
    chunks.erase(next);
    it = chunks.find(address);  // (btree: erasing invalidates iterators)
  }
  if (it != chunks.begin()) {
    if (auto previous = std::prev(it);
        previous->second.free && mergeable(previous->first, previous->second, address, chunk)) {
      free_by_size.erase(key(previous->first, previous->second));
      start = previous->first;
      chunk.size += previous->second.size;
      chunks.erase(it);
    }
  }
  chunk.free = true;
  chunks.insert_or_assign(start, chunk);
  free_by_size.insert(key(start, chunk));
  return start;
}

template <typename ChunkMap, typename FreeSet, typename Mergeable>
uint64_t free_and_coalesce(ChunkMap& chunks, FreeSet& free_by_size, typename ChunkMap::iterator it,
                           Mergeable mergeable) {
  return free_and_coalesce(chunks, free_by_size, it, mergeable, [](uint64_t start, const auto& chunk) {
    return std::pair<uint64_t, uint64_t>(chunk.size, start);
  });
}

}  // namespace memreplay::suballoc
