#include "policies/detail/coalescing_regions.h"

#include <algorithm>

namespace memreplay::suballoc {

CoalescingRegions::~CoalescingRegions() = default;

std::optional<CoalescingRegions::Chunk> CoalescingRegions::allocate(uint64_t bytes) {
  Range* fit = nullptr;  // the first in (size, address) order
  chunks_.for_each_fit(bytes, [&](Range* range) {
    fit = range;
    return false;
  });
  if (fit == nullptr) return std::nullopt;
  const uint64_t size = fit->size();
  Range* chunk = chunks_.carve(fit, fit->start, size > bytes && split_(size, bytes) ? bytes : size);
  live_.emplace(chunk->start, chunk);
  return Chunk{chunk->start, chunk->size()};
}

bool CoalescingRegions::free(uint64_t address) {
  const auto node = live_.extract(address);
  if (node.empty()) return false;
  chunks_.give_back(node.mapped());  // merged with free neighbours of its own region only
  return true;
}

bool CoalescingRegions::add_region(uint64_t bytes) {
  const auto address = device_.malloc(bytes);
  if (!address) return false;
  regions_.emplace(*address, bytes);
  region_bytes_ += bytes;
  chunks_.add_chain(*address, *address + bytes);
  return true;
}

uint64_t CoalescingRegions::free_regions(uint64_t wanted) {
  std::vector<std::pair<uint64_t, uint64_t>> idle;  // (size, start) of wholly free regions
  for (const auto& [start, size] : regions_) {
    const Range* head = chunks_.chain_head(start);
    if (head->free && head->size() == size) idle.emplace_back(size, start);
  }
  std::sort(idle.rbegin(), idle.rend());
  uint64_t freed = 0;
  for (const auto& [size, start] : idle) {
    if (freed >= wanted) break;
    chunks_.remove_chain(chunks_.chain_head(start));
    regions_.erase(start);
    free_held(device_, start);
    region_bytes_ -= size;
    freed += size;
  }
  return freed;
}

}  // namespace memreplay::suballoc
