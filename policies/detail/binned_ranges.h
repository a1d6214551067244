// BinnedRanges: address spaces ("chains": a VmmArena's reservation, a BFC region, an RMM
// superblock or upstream block) cut into ranges, live blocks and free ranges, with no search by
// address on the hot path:
//   - every range links to its neighbours in its chain, in address order (boundary tags, as
//     PyTorch's blocks do), so that freeing a block merges it with free neighbours through two
//     pointers, and never across chains;
//   - free ranges also sit in size bins, 8 per power of two, each a list sorted by (size, start),
//     with a bitmap of the bins that hold one. Bins partition the sizes in order, so walking them
//     upwards from a request's bin visits the free ranges in exactly the order of one
//     (size, start)-ordered set, without its rebalancing (best fit). With Order::first_fit each
//     bin is sorted by address instead, and the lowest-addressed range that holds a request is
//     the lowest of: the first fitting range of its own bin, the first range of each bin above.
//   - a free range belongs to a group (RMM's per-stream free lists; 0 when there is one list):
//     each group has its own bins, and free neighbours merge only within a group.
// A range is a node from a recycled arena; the node is the handle: carve() takes a free range and
// returns the block's, give_back() takes the block's.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include <absl/container/flat_hash_map.h>

#include "policies/detail/block_arena.h"

namespace memreplay::suballoc {

struct SizeBins;

struct Range {
  uint64_t start = 0;
  uint64_t end = 0;
  bool free = true;
  // Free for the owner's own index of its free ranges (VmmArena: 1 + the range's place in its list
  // of free ranges with unmapped pages; 0: not listed). BinnedRanges never reads it; a new free
  // range starts at 0, and a carved range keeps its value (the owner clears it). In the padding
  // after `free`: a Range stays 88 bytes.
  uint32_t owner_slot = 0;
  uint64_t chain = 0;  // the start of its chain
  SizeBins* bins = nullptr;  // free ranges: their group's bins
  Range* left = nullptr;  // neighbours in address order
  Range* right = nullptr;
  Range* bin_previous = nullptr;  // free ranges: the size bin's list
  Range* bin_next = nullptr;
  Range* next = nullptr;  // the node arena's free list
  uint64_t size() const { return end - start; }
};

// One group's free ranges: 8 bins per power of two, and a bitmap of the bins that hold a range.
struct SizeBins {
  static constexpr size_t kSubBins = 8;
  static constexpr size_t kBins = 64 * kSubBins;
  static size_t bin_of(uint64_t size) {
    if (size < kSubBins) return static_cast<size_t>(size);
    const int top = std::bit_width(size) - 1;  // >= 3
    return static_cast<size_t>(top) * kSubBins + ((size >> (top - 3)) & (kSubBins - 1));
  }
  std::array<Range*, kBins> heads{};
  std::array<uint64_t, kBins / 64> occupied{};  // bit b: heads[b] is not empty
  // Calls visit(first range) for every non-empty bin above `bin`, upwards, until it returns false.
  template <class Visit>
  void for_each_above(size_t bin, Visit&& visit) const;
};

class BinnedRanges {
 public:
  enum class Order { best_fit, first_fit };  // of the free ranges within a bin: (size, start), start
  explicit BinnedRanges(Order order = Order::best_fit) : order_(order) {}

  // A new chain [start, end), one free range of `group` (returned). It must not overlap another.
  Range* add_chain(uint64_t start, uint64_t end, uint64_t group = 0);
  // Drops a chain that is one free range (a range with no neighbours).
  void remove_chain(Range* whole);
  // The range at the start of the chain that starts at `start` (nullptr when there is none).
  Range* chain_head(uint64_t start) const;
  // Takes [address, +bytes) out of the free `range` that holds it; what is left on either side
  // stays free, in its group. Returns the block's range.
  Range* carve(Range* range, uint64_t address, uint64_t bytes);
  // Frees a block's range into `group`, merged with its free neighbours of that group; returns
  // the merged free range.
  Range* give_back(Range* block, uint64_t group = 0);
  // Order::best_fit: calls visit(range) for every free range of `group` of at least `bytes`, in
  // (size, start) order, until it returns false.
  template <class Visit>
  void for_each_fit(uint64_t bytes, Visit&& visit, uint64_t group = 0) const;
  // Order::first_fit: the lowest-addressed free range of `group` of at least `bytes` (nullptr
  // when none).
  Range* first_fit(uint64_t bytes, uint64_t group = 0) const;
  // The groups that have had free ranges, ascending.
  std::vector<uint64_t> groups() const;
  // Every free range of the chain that starts at `start`, as (start, end), in address order.
  std::vector<std::pair<uint64_t, uint64_t>> free_in_chain(uint64_t start) const;
  // Drops every chain.
  void clear();

 private:
  SizeBins* bins_of(uint64_t group);  // made on first use
  [[gnu::noinline]] SizeBins* add_group(uint64_t group);  // off the hot path, so bins_of inlines
  const SizeBins* find_bins(uint64_t group) const;
  void bin_insert(Range* range);
  void bin_remove(Range* range);
  // A new free range [start, end) in `bins` linked into the address order between `left` and `right`.
  Range* make_free(uint64_t start, uint64_t end, SizeBins* bins, Range* left, Range* right);
  void unlink_and_destroy(Range* range);  // from the address order

  Order order_;
  detail::BlockArena<Range> nodes_;
  absl::flat_hash_map<uint64_t, Range*> heads_;  // chain start -> its first range
  std::vector<std::pair<uint64_t, std::unique_ptr<SizeBins>>> groups_;  // ascending by group
};

template <class Visit>
void SizeBins::for_each_above(size_t bin, Visit&& visit) const {
  for (size_t word = (bin + 1) / 64; word < occupied.size(); ++word) {
    uint64_t bits = occupied[word];
    if (word == (bin + 1) / 64) bits &= ~uint64_t{0} << ((bin + 1) % 64);
    for (; bits != 0; bits &= bits - 1)
      if (!visit(heads[word * 64 + static_cast<size_t>(std::countr_zero(bits))])) return;
  }
}

template <class Visit>
void BinnedRanges::for_each_fit(uint64_t bytes, Visit&& visit, uint64_t group) const {
  const SizeBins* bins = find_bins(group);
  if (bins == nullptr) return;
  const size_t first = SizeBins::bin_of(bytes);
  for (Range* range = bins->heads[first]; range != nullptr; range = range->bin_next)
    if (range->size() >= bytes && !visit(range)) return;
  bins->for_each_above(first, [&](Range* head) {
    for (Range* range = head; range != nullptr; range = range->bin_next)
      if (!visit(range)) return false;
    return true;
  });
}

}  // namespace memreplay::suballoc
