#include "policies/suballoc/coalescing_regions.h"

#include "policies/suballoc/coalesce.h"

#include <algorithm>
#include <iterator>

namespace memreplay::suballoc {

CoalescingRegions::~CoalescingRegions() = default;

void CoalescingRegions::insert_free(uint64_t address, const Chunk& chunk) {
  chunks_.insert_or_assign(address, chunk);
  by_size_.emplace(chunk.size, address);
}

std::optional<uint64_t> CoalescingRegions::allocate(uint64_t bytes) {
  const auto fit = by_size_.lower_bound({bytes, 0});
  if (fit == by_size_.end()) return std::nullopt;
  const auto [size, address] = *fit;
  by_size_.erase(fit);
  Chunk& chunk = chunks_.at(address);
  chunk.free = false;
  if (size > bytes && split_(size, bytes)) {
    chunk.size = bytes;
    insert_free(address + bytes, Chunk{size - bytes, chunk.region, true});
  }
  return address;
}

uint64_t CoalescingRegions::chunk_size(uint64_t address) const {
  const auto it = chunks_.find(address);
  return it == chunks_.end() || it->second.free ? 0 : it->second.size;
}

bool CoalescingRegions::free(uint64_t address) {
  const auto it = chunks_.find(address);
  if (it == chunks_.end() || it->second.free) return false;
  // Merge with the next chunk, then the previous one, when free and in the same region.
  free_and_coalesce(chunks_, by_size_, it, [](uint64_t, const Chunk& left, uint64_t, const Chunk& right) {
    return left.region == right.region;
  });
  return true;
}

bool CoalescingRegions::add_region(uint64_t bytes) {
  const auto address = device_.malloc(bytes);
  if (!address) return false;
  regions_.emplace(*address, bytes);
  region_bytes_ += bytes;
  insert_free(*address, Chunk{bytes, *address, true});
  return true;
}

uint64_t CoalescingRegions::free_regions(uint64_t wanted) {
  std::vector<std::pair<uint64_t, uint64_t>> idle;  // (size, start) of wholly free regions
  for (const auto& [start, size] : regions_) {
    const Chunk& chunk = chunks_.at(start);
    if (chunk.free && chunk.size == size) idle.emplace_back(size, start);
  }
  std::sort(idle.rbegin(), idle.rend());
  uint64_t freed = 0;
  for (const auto& [size, start] : idle) {
    if (freed >= wanted) break;
    by_size_.erase({size, start});
    chunks_.erase(start);
    regions_.erase(start);
    device_.free(start);
    region_bytes_ -= size;
    freed += size;
  }
  return freed;
}

}  // namespace memreplay::suballoc
