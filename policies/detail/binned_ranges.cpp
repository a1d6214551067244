#include "policies/detail/binned_ranges.h"

namespace memreplay::suballoc {

SizeBins* BinnedRanges::bins_of(uint64_t group) {
  for (auto& [id, bins] : groups_)  // a handful of groups: a scan beats a hash
    if (id == group) return bins.get();
  return add_group(group);
}

SizeBins* BinnedRanges::add_group(uint64_t group) {
  auto at = groups_.begin();
  while (at != groups_.end() && at->first < group) ++at;
  return groups_.emplace(at, group, std::make_unique<SizeBins>())->second.get();
}

const SizeBins* BinnedRanges::find_bins(uint64_t group) const {
  for (const auto& [id, bins] : groups_)
    if (id == group) return bins.get();
  return nullptr;
}

std::vector<uint64_t> BinnedRanges::groups() const {
  std::vector<uint64_t> ids;
  for (const auto& [id, bins] : groups_) ids.push_back(id);
  return ids;
}

void BinnedRanges::bin_insert(Range* range) {
  SizeBins& bins = *range->bins;
  const size_t bin = SizeBins::bin_of(range->size());
  // Sorted by (size, start) or by start: after every range that orders before it.
  const auto before = [&](const Range* other) {
    if (order_ == Order::first_fit || other->size() == range->size()) return other->start < range->start;
    return other->size() < range->size();
  };
  Range* previous = nullptr;
  Range* next = bins.heads[bin];
  while (next != nullptr && before(next)) {
    previous = next;
    next = next->bin_next;
  }
  range->bin_previous = previous;
  range->bin_next = next;
  if (next != nullptr) next->bin_previous = range;
  if (previous != nullptr) {
    previous->bin_next = range;
  } else {
    bins.heads[bin] = range;
    bins.occupied[bin / 64] |= uint64_t{1} << (bin % 64);
  }
}

void BinnedRanges::bin_remove(Range* range) {
  if (range->bin_next != nullptr) range->bin_next->bin_previous = range->bin_previous;
  if (range->bin_previous != nullptr) {
    range->bin_previous->bin_next = range->bin_next;
    return;
  }
  SizeBins& bins = *range->bins;
  const size_t bin = SizeBins::bin_of(range->size());
  bins.heads[bin] = range->bin_next;
  if (bins.heads[bin] == nullptr) bins.occupied[bin / 64] &= ~(uint64_t{1} << (bin % 64));
}

Range* BinnedRanges::make_free(uint64_t start, uint64_t end, SizeBins* bins, Range* left, Range* right) {
  Range* range = nodes_.make(Range{.start = start,
                                   .end = end,
                                   .free = true,
                                   .chain = left == nullptr ? start : left->chain,
                                   .bins = bins,
                                   .left = left,
                                   .right = right});
  if (left != nullptr) {
    left->right = range;
  } else {
    heads_[start] = range;
  }
  if (right != nullptr) right->left = range;
  bin_insert(range);
  return range;
}

void BinnedRanges::unlink_and_destroy(Range* range) {  // never a chain's first range
  range->left->right = range->right;
  if (range->right != nullptr) range->right->left = range->left;
  nodes_.destroy(range);
}

Range* BinnedRanges::add_chain(uint64_t start, uint64_t end, uint64_t group) {
  return make_free(start, end, bins_of(group), nullptr, nullptr);
}

void BinnedRanges::remove_chain(Range* whole) {
  bin_remove(whole);
  heads_.erase(whole->start);
  nodes_.destroy(whole);
}

Range* BinnedRanges::first_fit(uint64_t bytes, uint64_t group) const {
  const SizeBins* bins = find_bins(group);
  if (bins == nullptr) return nullptr;
  const size_t first = SizeBins::bin_of(bytes);
  Range* lowest = nullptr;
  for (Range* range = bins->heads[first]; range != nullptr; range = range->bin_next)
    if (range->size() >= bytes) {
      lowest = range;
      break;
    }
  bins->for_each_above(first, [&](Range* head) {  // every range above the request's bin holds it
    if (lowest == nullptr || head->start < lowest->start) lowest = head;
    return true;
  });
  return lowest;
}

Range* BinnedRanges::chain_head(uint64_t start) const {
  const auto it = heads_.find(start);
  return it == heads_.end() ? nullptr : it->second;
}

Range* BinnedRanges::carve(Range* range, uint64_t address, uint64_t bytes) {
  bin_remove(range);
  const uint64_t start = range->start;
  const uint64_t end = range->end;
  range->start = address;
  range->end = address + bytes;
  range->free = false;
  if (start < address) make_free(start, address, range->bins, range->left, range);
  if (address + bytes < end) make_free(address + bytes, end, range->bins, range, range->right);
  return range;
}

Range* BinnedRanges::give_back(Range* block, uint64_t group) {
  SizeBins* bins = bins_of(group);
  Range* range = block;
  range->free = true;
  range->bins = bins;
  if (Range* left = range->left; left != nullptr && left->free && left->bins == bins) {  // left absorbs it
    bin_remove(left);
    left->end = range->end;
    unlink_and_destroy(range);
    range = left;
  }
  if (Range* right = range->right; right != nullptr && right->free && right->bins == bins) {
    bin_remove(right);
    range->end = right->end;
    unlink_and_destroy(right);
  }
  bin_insert(range);
  return range;
}

std::vector<std::pair<uint64_t, uint64_t>> BinnedRanges::free_in_chain(uint64_t start) const {
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const Range* range = chain_head(start); range != nullptr; range = range->right)
    if (range->free) ranges.emplace_back(range->start, range->end);
  return ranges;
}

void BinnedRanges::clear() {
  for (const auto& [start, head] : heads_) {
    for (Range* range = head; range != nullptr;) {
      Range* right = range->right;
      nodes_.destroy(range);
      range = right;
    }
  }
  heads_.clear();
  groups_.clear();
}

}  // namespace memreplay::suballoc
