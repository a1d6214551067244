// NewestFitIndex: ids in the order they were added, each with a value; answers "the newest id whose
// value is at least v" in O(log n). DriverAddressModel keeps its chunks' largest free ranges here:
// the driver searches its chunks newest first for room, and a scan over every older chunk with too
// little room cost a B-tree lookup per chunk skipped.
//
// A max segment tree over slots in the order of add(): a leaf holds its id's value (0 once
// removed), an inner node the largest value below it, so the search walks down preferring the
// right (newer) child. Removed ids leave dead slots; when the slots run out the live ones are
// packed to the front in the same order and the tree is rebuilt (amortised O(1) per add).
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <optional>
#include <vector>

namespace memreplay {

class NewestFitIndex {
 public:
  // `id` (a small integer, reusable after remove) becomes the newest entry.
  void add(uint32_t id, uint64_t value) {
    if (used_ == leaves_) compact();
    const size_t slot = used_++;
    id_at_[slot] = id;
    if (id >= slot_of_.size()) slot_of_.resize(id + 1, kNone);
    slot_of_[id] = static_cast<uint32_t>(slot);
    ++live_;
    put(slot, value);
  }
  void set(uint32_t id, uint64_t value) { put(slot_of_[id], value); }
  void remove(uint32_t id) {
    const uint32_t slot = slot_of_[id];
    put(slot, 0);
    id_at_[slot] = kNone;
    slot_of_[id] = kNone;
    --live_;
  }
  // The newest id with a value >= `value` (> 0); nullopt if none.
  std::optional<uint32_t> newest_at_least(uint64_t value) const {
    if (leaves_ == 0 || max_[1] < value) return std::nullopt;
    // The newest slot answers most searches (the newest chunk fills first): one load, no descent.
    if (max_[leaves_ + used_ - 1] >= value) return id_at_[used_ - 1];
    size_t node = 1;
    while (node < leaves_) node = max_[2 * node + 1] >= value ? 2 * node + 1 : 2 * node;
    return id_at_[node - leaves_];
  }

 private:
  static constexpr uint32_t kNone = UINT32_MAX;

  void put(size_t slot, uint64_t value) {
    size_t node = leaves_ + slot;
    max_[node] = value;
    for (node /= 2; node >= 1; node /= 2) {
      const uint64_t larger = std::max(max_[2 * node], max_[2 * node + 1]);
      if (max_[node] == larger) break;  // nothing above changes either
      max_[node] = larger;
    }
  }

  // Packs the live slots to the front, in order, into a tree with room for as many again.
  void compact() {
    std::vector<std::pair<uint32_t, uint64_t>> entries;
    entries.reserve(live_);
    for (size_t slot = 0; slot < used_; ++slot)
      if (id_at_[slot] != kNone) entries.emplace_back(id_at_[slot], max_[leaves_ + slot]);
    leaves_ = std::max<size_t>(16, std::bit_ceil(2 * entries.size() + 1));
    max_.assign(2 * leaves_, 0);
    id_at_.assign(leaves_, kNone);
    used_ = entries.size();
    for (size_t slot = 0; slot < entries.size(); ++slot) {
      id_at_[slot] = entries[slot].first;
      slot_of_[entries[slot].first] = static_cast<uint32_t>(slot);
      max_[leaves_ + slot] = entries[slot].second;
    }
    for (size_t node = leaves_ - 1; node >= 1; --node) max_[node] = std::max(max_[2 * node], max_[2 * node + 1]);
  }

  size_t leaves_ = 0;  // a power of two, or 0 before the first add
  size_t used_ = 0;  // slots handed out since the last compaction, live or removed
  size_t live_ = 0;
  std::vector<uint64_t> max_;  // heap layout: node 1 the root, leaves at [leaves_, 2 * leaves_)
  std::vector<uint32_t> id_at_;  // slot -> id, kNone once removed
  std::vector<uint32_t> slot_of_;  // id -> slot
};

}  // namespace memreplay
