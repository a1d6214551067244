#include "policies/memreplay/arena_ranges.h"

namespace memreplay::detail {

void ArenaRanges::bin_insert(ArenaRange* range) {
  const size_t bin = bin_of(range->size());
  // Sorted by (size, start): after every range that orders before it.
  ArenaRange* previous = nullptr;
  ArenaRange* next = bins_[bin];
  while (next != nullptr && (next->size() < range->size() || (next->size() == range->size() && next->start < range->start))) {
    previous = next;
    next = next->bin_next;
  }
  range->bin_previous = previous;
  range->bin_next = next;
  if (next != nullptr) next->bin_previous = range;
  if (previous != nullptr) {
    previous->bin_next = range;
  } else {
    bins_[bin] = range;
    occupied_[bin / 64] |= uint64_t{1} << (bin % 64);
  }
}

void ArenaRanges::bin_remove(ArenaRange* range) {
  if (range->bin_next != nullptr) range->bin_next->bin_previous = range->bin_previous;
  if (range->bin_previous != nullptr) {
    range->bin_previous->bin_next = range->bin_next;
    return;
  }
  const size_t bin = bin_of(range->size());
  bins_[bin] = range->bin_next;
  if (bins_[bin] == nullptr) occupied_[bin / 64] &= ~(uint64_t{1} << (bin % 64));
}

ArenaRange* ArenaRanges::make_free(uint64_t start, uint64_t end, ArenaRange* left, ArenaRange* right) {
  ArenaRange* range = nodes_.make(start, end, true, left, right);
  if (left != nullptr) {
    left->right = range;
  } else {
    first_ = range;
  }
  if (right != nullptr) right->left = range;
  bin_insert(range);
  return range;
}

void ArenaRanges::unlink_and_destroy(ArenaRange* range) {
  if (range->left != nullptr) {
    range->left->right = range->right;
  } else {
    first_ = range->right;
  }
  if (range->right != nullptr) range->right->left = range->left;
  nodes_.destroy(range);
}

void ArenaRanges::reset(uint64_t start, uint64_t end) { make_free(start, end, nullptr, nullptr); }

ArenaRange* ArenaRanges::carve(ArenaRange* range, uint64_t address, uint64_t bytes) {
  bin_remove(range);
  const uint64_t start = range->start;
  const uint64_t end = range->end;
  range->start = address;
  range->end = address + bytes;
  range->free = false;
  if (start < address) make_free(start, address, range->left, range);
  if (address + bytes < end) make_free(address + bytes, end, range, range->right);
  return range;
}

void ArenaRanges::give_back(ArenaRange* block) {
  ArenaRange* range = block;
  range->free = true;
  if (ArenaRange* left = range->left; left != nullptr && left->free) {  // the left range absorbs it
    bin_remove(left);
    left->end = range->end;
    unlink_and_destroy(range);
    range = left;
  }
  if (ArenaRange* right = range->right; right != nullptr && right->free) {
    bin_remove(right);
    range->end = right->end;
    unlink_and_destroy(right);
  }
  bin_insert(range);
}

std::vector<std::pair<uint64_t, uint64_t>> ArenaRanges::free_by_address() const {
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const ArenaRange* range = first_; range != nullptr; range = range->right)
    if (range->free) ranges.emplace_back(range->start, range->end);
  return ranges;
}

void ArenaRanges::clear() {
  for (ArenaRange* range = first_; range != nullptr;) {
    ArenaRange* right = range->right;
    nodes_.destroy(range);
    range = right;
  }
  first_ = nullptr;
  bins_.fill(nullptr);
  occupied_.fill(0);
}

}  // namespace memreplay::detail
