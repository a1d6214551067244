#include "replayer/driver_address_model.h"

#include <algorithm>
#include <iterator>

namespace memreplay {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

uint64_t round_up(uint64_t n, uint64_t unit) { return (n + unit - 1) / unit * unit; }

// Adds [start, end) to `ranges`, merging it with the neighbours it touches; returns the size of
// the range it ends up in.
template <class Ranges>
uint64_t add_range(Ranges& ranges, uint64_t start, uint64_t end) {
  auto next = ranges.lower_bound(start);
  if (next != ranges.end() && next->first == end) {
    end = next->second;
    next = ranges.erase(next);
  }
  if (next != ranges.begin()) {
    auto prev = std::prev(next);
    if (prev->second == start) {
      start = prev->first;
      ranges.erase(prev);
    }
  }
  ranges[start] = end;
  return end - start;
}

// Takes [start, start+span) off the front of the free range that starts at `start`.
template <class Ranges>
void take_front(Ranges& ranges, typename Ranges::iterator range, uint64_t span) {
  const uint64_t start = range->first;
  const uint64_t end = range->second;
  ranges.erase(range);
  if (start + span < end) ranges[start + span] = end;
}

}  // namespace

DriverAddressModel::DriverAddressModel(uint64_t top, uint64_t va_bytes) {
  va_free_[top - va_bytes] = top;
  // Oldest first: the driver made them top-down too.
  for (const auto& [offset, bytes] : {std::pair{488 * kMiB, 24 * kMiB}, std::pair{414 * kMiB, 2 * kMiB}}) {
    Chunk hole;
    hole.end = top + offset + bytes;
    hole.permanent = true;
    hole.free[top + offset] = top + offset + bytes;
    add_chunk(top + offset, std::move(hole));
  }
}

std::optional<uint64_t> DriverAddressModel::allocate(uint64_t bytes) {
  const uint64_t span = round_up(bytes == 0 ? 1 : bytes, kPage);
  std::optional<uint64_t> address = take_from_chunks(span);
  if (!address) address = new_chunk(span);
  if (address) live_[*address] = span;
  return address;
}

void DriverAddressModel::add_chunk(uint64_t start, Chunk chunk) {
  chunk.created = ++chunks_created_;
  auto& added = chunks_[start] = std::move(chunk);
  update_room(start, added);
}

void DriverAddressModel::update_room(uint64_t start, Chunk& chunk) {
  chunk.largest_free = 0;
  for (const auto& [from, to] : chunk.free) chunk.largest_free = std::max(chunk.largest_free, to - from);
  if (chunk.largest_free > 0)
    with_room_[chunk.created] = start;
  else
    with_room_.erase(chunk.created);
}

std::optional<uint64_t> DriverAddressModel::take_from_chunks(uint64_t span) {
  for (auto newest = with_room_.rbegin(); newest != with_room_.rend(); ++newest) {
    Chunk& chunk = chunks_.at(newest->second);
    if (chunk.largest_free < span) continue;
    auto best = chunk.free.end();
    for (auto range = chunk.free.begin(); range != chunk.free.end(); ++range) {
      const uint64_t size = range->second - range->first;
      if (size >= span && (best == chunk.free.end() || size < best->second - best->first)) best = range;
    }
    if (best == chunk.free.end()) continue;
    const uint64_t address = best->first;
    const uint64_t best_size = best->second - best->first;
    take_front(chunk.free, best, span);
    ++chunk.live;
    // Only a cut into the largest free range can lower the largest (another may be as large).
    if (best_size == chunk.largest_free) update_room(newest->second, chunk);
    return address;
  }
  return std::nullopt;
}

std::optional<uint64_t> DriverAddressModel::new_chunk(uint64_t span) {
  const uint64_t size = round_up(span, kChunkUnit);
  for (auto range = va_free_.rbegin(); range != va_free_.rend(); ++range) {
    if (range->second - range->first < size + kPage) continue;  // a gap only just as large is passed over
    const uint64_t start = range->second - size;
    if (start == range->first)
      va_free_.erase(range->first);
    else
      range->second = start;
    Chunk chunk;
    chunk.end = start + size;
    chunk.live = 1;
    if (span < size) chunk.free[start + span] = start + size;
    add_chunk(start, std::move(chunk));
    return start;
  }
  return std::nullopt;
}

bool DriverAddressModel::release(uint64_t address) {
  const auto live = live_.find(address);
  if (live == live_.end()) return false;
  const uint64_t span = live->second;
  live_.erase(live);
  auto owner = std::prev(chunks_.upper_bound(address));
  Chunk& chunk = owner->second;
  const uint64_t merged = add_range(chunk.free, address, address + span);
  if (--chunk.live == 0 && !chunk.permanent) {
    add_range(va_free_, owner->first, chunk.end);
    with_room_.erase(chunk.created);
    chunks_.erase(owner);
  } else if (merged > chunk.largest_free) {  // the merged range absorbed only smaller ones
    if (chunk.largest_free == 0) with_room_[chunk.created] = owner->first;
    chunk.largest_free = merged;
  }
  return true;
}

uint64_t DriverAddressModel::span_of(uint64_t address) const {
  const auto live = live_.find(address);
  return live == live_.end() ? 0 : live->second;
}

}  // namespace memreplay
