#include "replayer/bound/occupancy_tree.h"

#include <algorithm>

namespace memreplay {

bool OccupancyTree::RangeUnion::add(uint64_t start, uint64_t end) {
  // The first range that ends at or after `start`: the first one [start, end) can touch.
  auto first = std::lower_bound(ranges.begin(), ranges.end(), start,
                                [](const Range& range, uint64_t value) { return range.end < value; });
  if (first == ranges.end() || first->start > end) {
    ranges.insert(first, Range{start, end});
    return true;
  }
  if (first->start <= start && end <= first->end) return false;
  auto last = first;
  uint64_t merged_end = end;
  while (last != ranges.end() && last->start <= end) merged_end = std::max(merged_end, (last++)->end);
  *first = Range{std::min(start, first->start), merged_end};
  ranges.erase(first + 1, last);
  return true;
}

uint64_t OccupancyTree::RangeUnion::overlap_end(uint64_t at, uint64_t size) const {
  // Ranges are disjoint and sorted, so their ends are sorted too: the first ending after `at`.
  const auto next = std::upper_bound(ranges.begin(), ranges.end(), at,
                                     [](uint64_t value, const Range& range) { return value < range.end; });
  return next != ranges.end() && next->start < at + size ? next->end : 0;
}

OccupancyTree::OccupancyTree(size_t moments) {
  while (leaves_ < moments) leaves_ *= 2;
  nodes_.resize(2 * leaves_);
}

void OccupancyTree::split(uint32_t from, uint32_t to) {
  canonical_.clear();
  for (size_t low = from + leaves_, high = to + leaves_; low < high; low /= 2, high /= 2) {
    if (low & 1) canonical_.push_back(low++);
    if (high & 1) canonical_.push_back(--high);
  }
}

uint64_t OccupancyTree::lowest_free(uint32_t from, uint32_t to, uint64_t size) {
  if (size == 0) return 0;  // as the sorted scan it replaces: an empty block fits at 0
  split(from, to);
  ++visit_;
  lists_.clear();
  for (const size_t node : canonical_) {
    nodes_[node].visit = visit_;
    if (!nodes_[node].below.ranges.empty()) lists_.push_back(&nodes_[node].below);
  }
  for (const size_t node : canonical_)
    for (size_t up = node / 2; up >= 1 && nodes_[up].visit != visit_; up /= 2) {
      nodes_[up].visit = visit_;
      if (!nodes_[up].cover.ranges.empty()) lists_.push_back(&nodes_[up].cover);
    }
  // The fixed point: stop once every list, in turn, has nothing overlapping [at, at + size).
  uint64_t at = 0;
  const size_t lists = lists_.size();
  for (size_t i = 0, quiet = 0; quiet < lists; i = (i + 1 == lists) ? 0 : i + 1) {
    bool moved = false;
    while (const uint64_t end = lists_[i]->overlap_end(at, size)) {
      at = end;
      moved = true;
    }
    quiet = moved ? 1 : quiet + 1;
  }
  return at;
}

void OccupancyTree::occupy(uint32_t from, uint32_t to, uint64_t offset, uint64_t end) {
  if (offset == end) return;
  split(from, to);
  ++visit_;
  for (const size_t node : canonical_) {
    nodes_[node].cover.add(offset, end);
    // below(parent) ⊇ below(child): once a node already holds the range, so do all above it.
    for (size_t up = node; up >= 1 && nodes_[up].visit != visit_; up /= 2) {
      nodes_[up].visit = visit_;
      if (!nodes_[up].below.add(offset, end)) break;
    }
  }
}

}  // namespace memreplay
