// IntervalSet: disjoint address ranges [start, end), adjacent ones merged into one, in address
// order: the mapped pages of a device or of a VMM arena, the free VA of the driver's address model.
// Inserting merges a range with the neighbours it touches; erasing cuts a range out of the one
// that holds it. Both take one B-tree lookup.
#pragma once

#include <cstdint>
#include <iterator>

#include <absl/container/btree_map.h>

namespace memreplay::detail {

class IntervalSet {
 public:
  using Map = absl::btree_map<uint64_t, uint64_t>;  // start -> end
  using const_iterator = Map::const_iterator;

  // Adds [start, end) (start < end), merged with the ranges it touches. False, with nothing
  // changed, when it overlaps a range of the set.
  bool insert(uint64_t start, uint64_t end) {
    auto next = ranges_.lower_bound(start);
    if (next != ranges_.end() && next->first < end) return false;
    bool joins_previous = false;
    if (next != ranges_.begin()) {
      const uint64_t previous_end = std::prev(next)->second;
      if (previous_end > start) return false;
      joins_previous = previous_end == start;
    }
    if (next != ranges_.end() && next->first == end) {
      end = next->second;
      next = ranges_.erase(next);
    }
    if (joins_previous) {
      std::prev(next)->second = end;
      return true;
    }
    ranges_.emplace_hint(next, start, end);
    return true;
  }

  // Cuts [start, end) (start < end) out of the range that holds it, which may leave a piece on
  // either side. False, with nothing changed, when no one range holds all of it.
  bool erase(uint64_t start, uint64_t end) {
    auto holder = ranges_.upper_bound(start);
    if (holder == ranges_.begin()) return false;
    --holder;
    const uint64_t holder_start = holder->first;
    const uint64_t holder_end = holder->second;
    if (end > holder_end) return false;
    if (holder_start < start) {
      holder->second = start;  // the piece below stays in the node
      if (end < holder_end) ranges_.emplace_hint(std::next(holder), end, holder_end);
      return true;
    }
    holder = ranges_.erase(holder);
    if (end < holder_end) ranges_.emplace_hint(holder, end, holder_end);
    return true;
  }

  // Whether one range holds all of [start, end).
  bool holds(uint64_t start, uint64_t end) const {
    auto holder = ranges_.upper_bound(start);
    if (holder == ranges_.begin()) return false;
    return std::prev(holder)->second >= end;
  }

  bool empty() const { return ranges_.empty(); }
  size_t size() const { return ranges_.size(); }
  void clear() { ranges_.clear(); }
  const_iterator begin() const { return ranges_.begin(); }
  const_iterator end() const { return ranges_.end(); }
  const_iterator lower_bound(uint64_t address) const { return ranges_.lower_bound(address); }
  const_iterator upper_bound(uint64_t address) const { return ranges_.upper_bound(address); }

 private:
  Map ranges_;
};

}  // namespace memreplay::detail
