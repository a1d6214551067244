// The driver address model's rules (replayer/driver_address_model.h) in the plainest form: a
// flag per 2 MiB page of each chunk, every chunk tried newest first, runs of free pages counted.
// The differential test holds DriverAddressModel, whose structures are faster, to the same
// addresses.
#pragma once

#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "base/units.h"

namespace memreplay::testing {

class ReferenceAddressModel {
 public:
  static constexpr uint64_t kPage = 2ull << 20;
  static constexpr uint64_t kChunkUnit = 32ull << 20;

  ReferenceAddressModel(uint64_t top, uint64_t va_bytes) {
    va_free_[top - va_bytes] = top;
    for (const auto& [offset, bytes] : {std::pair{488 * kMiB, 24 * kMiB}, std::pair{414 * kMiB, 2 * kMiB}}) {
      Chunk& hole = add_chunk(top + offset, top + offset + bytes);
      hole.permanent = true;
      hole.free_pages.assign(bytes / kPage, true);
    }
  }

  std::optional<uint64_t> allocate(uint64_t bytes) {
    const uint64_t span = round_up(bytes == 0 ? 1 : bytes, kPage);
    std::optional<uint64_t> address = take_from_chunks(span);
    if (!address) address = new_chunk(span);
    if (address) live_[*address] = span;
    return address;
  }

  bool release(uint64_t address) {
    const auto live = live_.find(address);
    if (live == live_.end()) return false;
    auto owner = std::prev(chunks_.upper_bound(address));
    Chunk& chunk = owner->second;
    const uint64_t first = (address - owner->first) / kPage;
    for (uint64_t page = first; page < first + live->second / kPage; ++page) chunk.free_pages[page] = true;
    live_.erase(live);
    if (--chunk.live == 0 && !chunk.permanent) {
      give_back(owner->first, chunk.end);
      chunks_.erase(owner);
    }
    return true;
  }

 private:
  struct Chunk {
    uint64_t end;
    uint64_t created;
    uint64_t live = 0;
    bool permanent = false;
    std::vector<bool> free_pages;  // one per 2 MiB page of the chunk
  };

  static uint64_t round_up(uint64_t n, uint64_t unit) { return (n + unit - 1) / unit * unit; }

  // The VA's free ranges, coalesced by a pass over all of them.
  void give_back(uint64_t start, uint64_t end) {
    va_free_[start] = end;
    for (auto range = va_free_.begin(); range != va_free_.end();) {
      const auto after = std::next(range);
      if (after != va_free_.end() && range->second == after->first) {
        range->second = after->second;
        va_free_.erase(after);
      } else {
        range = after;
      }
    }
  }

  Chunk& add_chunk(uint64_t start, uint64_t end) {
    Chunk& chunk = chunks_[start];
    chunk.end = end;
    chunk.created = ++created_;
    return chunk;
  }

  // Newest chunk first; in it the smallest run of free pages that fits, the lower one on a tie.
  std::optional<uint64_t> take_from_chunks(uint64_t span) {
    const uint64_t pages = span / kPage;
    std::map<uint64_t, std::pair<uint64_t, Chunk*>> newest_first;  // ~created -> (start, chunk)
    for (auto& [start, chunk] : chunks_) newest_first[~chunk.created] = {start, &chunk};
    for (auto& [order, entry] : newest_first) {
      auto& [start, chunk] = entry;
      std::optional<std::pair<uint64_t, uint64_t>> best;  // (run length, first page)
      const uint64_t count = chunk->free_pages.size();
      for (uint64_t page = 0; page < count;) {
        if (!chunk->free_pages[page]) {
          ++page;
          continue;
        }
        uint64_t run = 0;
        while (page + run < count && chunk->free_pages[page + run]) ++run;
        if (run >= pages && (!best || run < best->first)) best = std::pair{run, page};
        page += run;
      }
      if (!best) continue;
      for (uint64_t page = best->second; page < best->second + pages; ++page) chunk->free_pages[page] = false;
      ++chunk->live;
      return start + best->second * kPage;
    }
    return std::nullopt;
  }

  // The top of the highest free VA range larger than the new chunk.
  std::optional<uint64_t> new_chunk(uint64_t span) {
    const uint64_t size = round_up(span, kChunkUnit);
    for (auto range = va_free_.rbegin(); range != va_free_.rend(); ++range) {
      if (range->second - range->first < size + kPage) continue;
      const uint64_t start = range->second - size;
      if (start == range->first)
        va_free_.erase(range->first);
      else
        range->second = start;
      Chunk& chunk = add_chunk(start, start + size);
      chunk.live = 1;
      chunk.free_pages.assign(size / kPage, true);
      for (uint64_t page = 0; page < span / kPage; ++page) chunk.free_pages[page] = false;
      return start;
    }
    return std::nullopt;
  }

  std::map<uint64_t, uint64_t> va_free_;  // start -> end
  std::map<uint64_t, Chunk> chunks_;  // by start
  uint64_t created_ = 0;
  std::map<uint64_t, uint64_t> live_;  // address -> span
};

}  // namespace memreplay::testing
