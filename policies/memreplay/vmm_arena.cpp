#include "policies/memreplay/vmm_arena.h"

#include <algorithm>
#include <vector>

namespace memreplay::detail {

VmmArena::VmmArena(Device& device, uint64_t va_bytes)
    : device_(device), va_bytes_(va_bytes), page_(device.granularity()) {
  va_bytes_ = page_ceil(va_bytes_);
}

// What is still mapped or reserved when a replay ends stays with the Device, which gives it back
// when it goes (CudaDevice::release_everything); a policy does not outlive its device.
VmmArena::~VmmArena() = default;

bool VmmArena::ensure_reserved() {
  if (base_) return true;
  base_ = device_.reserve_address(va_bytes_);
  if (!base_) return false;
  insert_free(*base_, *base_ + va_bytes_);
  return true;
}

uint64_t VmmArena::unmapped_bytes_in(uint64_t start, uint64_t end) const {
  uint64_t covered = 0;
  auto it = mapped_.upper_bound(start);
  if (it != mapped_.begin()) --it;
  for (; it != mapped_.end() && it->first < end; ++it)
    if (it->second > start) covered += std::min(end, it->second) - std::max(start, it->first);
  return (end - start) - covered;
}

std::optional<VmmArena::Placement> VmmArena::place(uint64_t bytes, bool from_top) {
  if (!ensure_reserved()) return std::nullopt;
  std::optional<Placement> best;
  for (auto it = free_by_size_.lower_bound({bytes, 0}); it != free_by_size_.end(); ++it) {
    const auto [size, start] = *it;
    const uint64_t end = start + size;
    // At the range's start, and (for ranges with mapped pages at their end) flush with its end.
    const uint64_t low = start;
    const uint64_t high = end - bytes;
    for (const uint64_t address : {from_top ? high : low, from_top ? low : high}) {
      const uint64_t cost = unmapped_bytes_in(page_floor(address), page_ceil(address + bytes));
      if (!best || cost < best->new_bytes) best = Placement{address, cost};
      if (cost == 0 || low == high) break;
    }
    if (best && best->new_bytes == 0) break;  // best fit among the ranges that cost nothing
  }
  return best;
}

bool VmmArena::take(uint64_t address, uint64_t bytes, uint64_t extend_bytes) {
  auto range = free_by_end_.upper_bound(address);  // the free range holding the block
  const uint64_t range_end = range->first;
  const uint64_t lo = page_floor(address);
  uint64_t hi = page_ceil(address + bytes);
  if (extend_bytes > 0) {
    // Only over pages that are unmapped and free, up to the next mapped page.
    const auto next_mapped = mapped_.lower_bound(hi);
    const bool page_after_mapped = (next_mapped != mapped_.end() && next_mapped->first == hi) ||
                                   (next_mapped != mapped_.begin() && std::prev(next_mapped)->second > hi);
    if (!page_after_mapped) {
      uint64_t limit = page_floor(range_end);
      if (next_mapped != mapped_.end()) limit = std::min(limit, next_mapped->first);
      hi = std::max(hi, std::min(limit, hi + page_ceil(extend_bytes)));
    }
  }
  // Map each unmapped gap of [lo, hi).
  uint64_t cursor = lo;
  while (cursor < hi) {
    auto it = mapped_.upper_bound(cursor);
    if (it != mapped_.begin() && std::prev(it)->second > cursor) {
      cursor = std::prev(it)->second;
      continue;
    }
    const uint64_t gap_end = it == mapped_.end() ? hi : std::min(hi, it->first);
    if (!device_.map(cursor, gap_end - cursor)) return false;
    add_mapped(cursor, gap_end);
    cursor = gap_end;
  }
  const uint64_t start = range->second;
  const uint64_t end = range->first;
  free_by_size_.erase({end - start, start});
  if (address + bytes < end) {  // the right part keeps the range's end, its key: no re-insertion
    range->second = address + bytes;
    free_by_size_.emplace(end - (address + bytes), address + bytes);
  } else {
    free_by_end_.erase(range);
  }
  if (start < address) insert_free(start, address);
  live_bytes_ += bytes;
  return true;
}

void VmmArena::give_back(uint64_t address, uint64_t bytes) {
  live_bytes_ -= bytes;
  uint64_t start = address;
  const uint64_t end = address + bytes;
  // The free neighbours: the range ending at `start`, the range starting at `end`.
  if (const auto previous = free_by_end_.find(start); previous != free_by_end_.end()) {
    start = previous->second;
    free_by_size_.erase({previous->first - previous->second, previous->second});
    free_by_end_.erase(previous);
  }
  if (auto next = free_by_end_.upper_bound(end); next != free_by_end_.end() && next->second == end) {
    free_by_size_.erase({next->first - next->second, next->second});
    next->second = start;  // keeps its end, its key
    free_by_size_.emplace(next->first - start, start);
    return;
  }
  insert_free(start, end);
}

uint64_t VmmArena::reclaim(uint64_t wanted, uint64_t keep_address, uint64_t keep_bytes) {
  const uint64_t keep_lo = page_floor(keep_address);
  const uint64_t keep_hi = keep_bytes == 0 ? keep_lo : page_ceil(keep_address + keep_bytes);
  // Runs of mapped pages that lie wholly inside a free range, outside the kept pages.
  std::vector<std::pair<uint64_t, uint64_t>> runs;
  const auto add_runs = [&](uint64_t lo, uint64_t hi) {
    if (lo >= hi) return;
    auto it = mapped_.upper_bound(lo);
    if (it != mapped_.begin()) --it;
    for (; it != mapped_.end() && it->first < hi; ++it) {
      const uint64_t s = std::max(lo, it->first);
      const uint64_t e = std::min(hi, it->second);
      if (s < e) runs.emplace_back(s, e);
    }
  };
  for (const auto& [end, start] : free_by_end_) {
    const uint64_t lo = page_ceil(start);
    const uint64_t hi = page_floor(end);
    if (keep_lo < keep_hi && lo < keep_hi && keep_lo < hi) {
      add_runs(lo, keep_lo);
      add_runs(keep_hi, hi);
    } else {
      add_runs(lo, hi);
    }
  }
  // One call where one run suffices: the smallest run that holds `wanted`, cut at its end; else
  // the largest runs first.
  std::sort(runs.begin(), runs.end(),
            [](const auto& a, const auto& b) { return a.second - a.first > b.second - b.first; });
  const uint64_t wanted_pages = wanted == UINT64_MAX ? wanted : page_ceil(wanted);
  auto fit = runs.end();
  for (auto it = runs.begin(); it != runs.end() && it->second - it->first >= wanted_pages; ++it) fit = it;
  if (fit != runs.end()) {
    device_.unmap(fit->second - wanted_pages, wanted_pages);
    remove_mapped(fit->second - wanted_pages, fit->second);
    return wanted_pages;
  }
  uint64_t unmapped = 0;
  for (const auto& [start, end] : runs) {
    if (unmapped >= wanted) break;
    const uint64_t cut = std::min(end - start, wanted_pages - unmapped);
    device_.unmap(end - cut, cut);
    remove_mapped(end - cut, end);
    unmapped += cut;
  }
  return unmapped;
}

void VmmArena::release_all() {
  reclaim(UINT64_MAX);
  if (live_bytes_ == 0 && base_) {
    device_.release_address(*base_, va_bytes_);
    base_.reset();
    free_by_end_.clear();
    free_by_size_.clear();
  }
}

void VmmArena::insert_free(uint64_t start, uint64_t end) {
  free_by_end_.emplace(end, start);
  free_by_size_.emplace(end - start, start);
}

void VmmArena::add_mapped(uint64_t start, uint64_t end) {
  mapped_bytes_ += end - start;
  auto next = mapped_.lower_bound(start);
  if (next != mapped_.end() && next->first == end) {
    end = next->second;
    next = mapped_.erase(next);
  }
  if (next != mapped_.begin() && std::prev(next)->second == start) {
    std::prev(next)->second = end;
    return;
  }
  mapped_.emplace(start, end);
}

void VmmArena::remove_mapped(uint64_t start, uint64_t end) {
  mapped_bytes_ -= end - start;
  auto it = std::prev(mapped_.upper_bound(start));  // the mapped range holding [start, end)
  const uint64_t range_start = it->first;
  const uint64_t range_end = it->second;
  mapped_.erase(it);
  if (range_start < start) mapped_.emplace(range_start, start);
  if (end < range_end) mapped_.emplace(end, range_end);
}

}  // namespace memreplay::detail
