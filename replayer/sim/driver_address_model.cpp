#include "replayer/sim/driver_address_model.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "base/units.h"

namespace memreplay {
namespace {

uint64_t round_up(uint64_t n, uint64_t unit) { return (n + unit - 1) / unit * unit; }

// InlinedVector's insert and erase move the elements behind with memcpy and memmove calls, dearer
// than the one or two 16-byte ranges a chunk's short list has behind: swap them into place.
template <class Ranges, class Range>
void insert_at(Ranges& ranges, size_t at, const Range& range) {
  ranges.push_back(range);
  Range* const data = ranges.data();
  for (size_t i = ranges.size() - 1; i > at; --i) std::swap(data[i], data[i - 1]);
}
template <class Ranges>
void erase_at(Ranges& ranges, size_t at) {
  auto* const data = ranges.data();
  for (size_t i = at + 1; i < ranges.size(); ++i) std::swap(data[i - 1], data[i]);
  ranges.pop_back();
}

// Adds [start, end) to the sorted `ranges`, merging it with the neighbours it touches; returns the
// size of the range it ends up in.
template <class Ranges>
uint64_t add_range(Ranges& ranges, uint64_t start, uint64_t end) {
  const auto next = std::lower_bound(ranges.begin(), ranges.end(), start,
                                     [](const auto& range, uint64_t at) { return range.start < at; });
  const bool joins_next = next != ranges.end() && next->start == end;
  const bool joins_prev = next != ranges.begin() && std::prev(next)->end == start;
  if (joins_prev && joins_next) {
    const auto prev = std::prev(next);
    prev->end = next->end;
    erase_at(ranges, static_cast<size_t>(next - ranges.begin()));
    return prev->end - prev->start;
  }
  if (joins_prev) {
    const auto prev = std::prev(next);
    prev->end = end;
    return end - prev->start;
  }
  if (joins_next) {
    next->start = start;
    return next->end - start;
  }
  insert_at(ranges, static_cast<size_t>(next - ranges.begin()), typename Ranges::value_type{start, end});
  return end - start;
}

}  // namespace

// The driver's own chunks lie in the 512 MiB above the heap's top.
constexpr uint64_t kDriverRegionBytes = 512 * kMiB;

DriverAddressModel::DriverAddressModel(uint64_t top, uint64_t va_bytes)
    // Chunks are cut downwards from `top` in whole pages: the window's pages align to it.
    : window_base_(top - round_up(va_bytes, kPage)),
      window_pages_((round_up(va_bytes, kPage) + kDriverRegionBytes) / kPage),
      live_pages_((window_pages_ + kLeafPages - 1) / kLeafPages) {
  va_free_.insert(top - va_bytes, top);
  // Oldest first: the driver made them top-down too.
  for (const auto& [offset, bytes] : {std::pair{488 * kMiB, 24 * kMiB}, std::pair{414 * kMiB, 2 * kMiB}}) {
    const uint64_t start = top + offset;
    const uint32_t id = add_chunk(start, start + bytes, /*permanent=*/true);
    chunks_[id].free.push_back({start, start + bytes});
    chunks_[id].largest_free = bytes;
    room_.set(id, bytes);
  }
}

uint32_t DriverAddressModel::add_chunk(uint64_t start, uint64_t end, bool permanent) {
  uint32_t id;
  if (unused_ids_.empty()) {
    id = static_cast<uint32_t>(chunks_.size());
    chunks_.emplace_back();
  } else {
    id = unused_ids_.back();
    unused_ids_.pop_back();
  }
  Chunk& chunk = chunks_[id];
  chunk.start = start;
  chunk.end = end;
  chunk.live = 0;
  chunk.largest_free = 0;
  chunk.permanent = permanent;
  chunk.free.clear();
  room_.add(id, 0);
  return id;
}

std::optional<uint64_t> DriverAddressModel::allocate(uint64_t bytes) {
  const uint64_t span = round_up(bytes == 0 ? 1 : bytes, kPage);
  std::optional<Placement> placed = take_from_chunks(span);
  if (!placed) placed = new_chunk(span);
  if (!placed) return std::nullopt;
  *live_at(placed->address, /*create=*/true) = Live{static_cast<uint32_t>(span / kPage), placed->chunk, bytes};
  ++live_count_;
  return placed->address;
}

std::optional<DriverAddressModel::Placement> DriverAddressModel::take_from_chunks(uint64_t span) {
  // The newest chunk whose largest free range fits: every newer one has too little room.
  const std::optional<uint32_t> id = room_.newest_at_least(span);
  if (!id) return std::nullopt;
  Chunk& chunk = chunks_[*id];
  auto best = chunk.free.end();
  for (auto range = chunk.free.begin(); range != chunk.free.end(); ++range) {
    const uint64_t size = range->end - range->start;
    if (size >= span && (best == chunk.free.end() || size < best->end - best->start)) best = range;
  }
  const uint64_t address = best->start;
  const uint64_t best_size = best->end - best->start;
  if (best_size == span)
    erase_at(chunk.free, static_cast<size_t>(best - chunk.free.begin()));
  else
    best->start += span;
  ++chunk.live;
  // Only a cut into the largest free range can lower the largest (another may be as large).
  if (best_size == chunk.largest_free) {
    chunk.largest_free = 0;
    for (const Range& range : chunk.free) chunk.largest_free = std::max(chunk.largest_free, range.end - range.start);
    room_.set(*id, chunk.largest_free);
  }
  return Placement{address, *id};
}

std::optional<DriverAddressModel::Placement> DriverAddressModel::new_chunk(uint64_t span) {
  const uint64_t size = round_up(span, kChunkUnit);
  for (auto range = va_free_.end(); range != va_free_.begin();) {  // from the highest range down
    --range;
    if (range->second - range->first < size + kPage) continue;  // a gap only just as large is passed over
    const uint64_t start = range->second - size;
    va_free_.erase(start, range->second);
    const uint32_t id = add_chunk(start, start + size, /*permanent=*/false);
    Chunk& chunk = chunks_[id];
    chunk.live = 1;
    if (span < size) {
      chunk.free.push_back({start + span, start + size});
      chunk.largest_free = size - span;
      room_.set(id, chunk.largest_free);
    }
    return Placement{start, id};
  }
  return std::nullopt;
}

std::optional<uint64_t> DriverAddressModel::release(uint64_t address) {
  Live* const found = live_at(address, /*create=*/false);
  if (found == nullptr || found->pages == 0) return std::nullopt;
  const Live live = *found;
  *found = Live{};
  --live_count_;
  Chunk& chunk = chunks_[live.chunk];
  const uint64_t merged = add_range(chunk.free, address, address + live.pages * kPage);
  if (--chunk.live == 0 && !chunk.permanent) {
    va_free_.insert(chunk.start, chunk.end);
    room_.remove(live.chunk);
    unused_ids_.push_back(live.chunk);
  } else if (merged > chunk.largest_free) {  // the merged range absorbed only smaller ones
    chunk.largest_free = merged;
    room_.set(live.chunk, merged);
  }
  return live.bytes;
}

uint64_t DriverAddressModel::span_of(uint64_t address) const {
  const Live* const live = live_at(address);
  return live == nullptr ? 0 : live->pages * kPage;
}

DriverAddressModel::Live* DriverAddressModel::live_at(uint64_t address, bool create) {
  if (address < window_base_ || (address - window_base_) % kPage != 0) return nullptr;
  const uint64_t page = (address - window_base_) / kPage;
  if (page >= window_pages_) return nullptr;
  Live* const leaf = live_pages_[page / kLeafPages].get();
  if (leaf == nullptr) return create ? &make_leaf(page / kLeafPages)[page % kLeafPages] : nullptr;
  return &leaf[page % kLeafPages];
}

DriverAddressModel::Live* DriverAddressModel::make_leaf(size_t leaf) {
  live_pages_[leaf] = std::make_unique<Live[]>(kLeafPages);
  return live_pages_[leaf].get();
}

const DriverAddressModel::Live* DriverAddressModel::live_at(uint64_t address) const {
  return const_cast<DriverAddressModel*>(this)->live_at(address, /*create=*/false);
}

}  // namespace memreplay
