// VmmArena: one large virtual address reservation whose physical pages are mapped only under
// live blocks, cuMemMap-style, so that placement and backing are separate decisions:
//
//   VA   |--blk--|..free..|---blk---|.......free (the tail, up to the reservation's end).......|
//   pages [mapped ][mapped][unmapped][mapped ][mapped ]  unmapped ...
//
// A block may start anywhere (512-byte aligned) and straddle pages; the pages it touches must be
// mapped while it lives. A free range keeps its pages mapped (cached) until reclaim() unmaps the
// pages no live block touches. Invariants:
//   Σ live block bytes + Σ free range bytes = reservation bytes
//   mapped_bytes() = Σ mapped page ranges = what the Device counts as reserved for this arena
// Used by the `memreplay` policy (memreplay_policy.cpp) only.
#pragma once

#include <bit>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "policies/detail/binned_ranges.h"
#include "policies/detail/interval_set.h"
#include "policies/device.h"

namespace memreplay::detail {

class VmmArena {
 public:
  // Reserves `va_bytes` of address space on first use.
  VmmArena(Device& device, uint64_t va_bytes);
  ~VmmArena();
  VmmArena(const VmmArena&) = delete;
  VmmArena& operator=(const VmmArena&) = delete;

  struct Placement {
    uint64_t address = 0;
    uint64_t new_bytes = 0;  // bytes of pages that must be mapped for the block (0: all mapped)
    suballoc::Range* range = nullptr;  // the free range holding it
  };
  // Where `bytes` would cost the fewest newly mapped pages. Among places free of cost: a free range
  // it fills exactly, else the smallest free range that still has unmapped pages (what the block
  // leaves there stays contiguous with the unmapped frontier), else the smallest free range (best
  // fit); within a range the lowest address. nullopt when the address space is exhausted.
  // `from_top`: among equal costs prefer the high end of a free range (large blocks gather at the
  // top of the address space, small ones at the bottom).
  std::optional<Placement> place(uint64_t bytes, bool from_top);
  // A placement of `bytes` that needs fewer new pages than `best` (place()'s), at the start or end
  // of a mapped run inside a free range, the shortest such run among equal costs; nullopt when
  // there is none.
  std::optional<Placement> place_among_mapped(uint64_t bytes, const Placement& best);
  // Where `bytes` adds the fewest pages to those live blocks touch (the footprint a capacity must
  // hold), then the fewest newly mapped pages, then best fit.
  std::optional<Placement> place_tightest(uint64_t bytes);
  // A placement of `bytes` that needs no more newly mapped pages than `best` (place()'s) and adds
  // fewer pages to those live blocks touch: the fewest, in the smallest free range among equals;
  // nullopt when there is none.
  std::optional<Placement> place_tighter(uint64_t bytes, const Placement& best);
  // `best` (a place that needs no new page) moved within its free range to the page boundary
  // next to it, for a block of whole pages: both its ends on page boundaries, so that neither
  // leaves a partly used page at a hole's edge once its neighbours go. Only where that needs no
  // new page and adds no page to those live blocks touch; nullopt otherwise.
  std::optional<Placement> place_aligned(uint64_t bytes, const Placement& best) const;
  // `bytes` at `address` inside the free `range` (a planned place), with the new pages it needs;
  // nullopt when the range is not free or does not hold it there.
  std::optional<Placement> place_in(const suballoc::Range* range, uint64_t address, uint64_t bytes) const;
  // The free range with unmapped pages that holds `address`, nullptr when none does.
  const suballoc::Range* growable_range_holding(uint64_t address) const {
    for (const Growable& entry : growable_)
      if (entry.range->start <= address && address < entry.range->end) return entry.range;
    return nullptr;
  }
  // The free range that holds `address`, nullptr when none does: a lookup among those with
  // unmapped pages, else a walk over the free ranges of at least `bytes`.
  const suballoc::Range* free_range_holding(uint64_t address, uint64_t bytes) const {
    if (const suballoc::Range* range = growable_range_holding(address)) return range;
    const suballoc::Range* holding = nullptr;
    ranges_.for_each_fit(bytes, [&](suballoc::Range* range) {
      if (range->start <= address && address < range->end) holding = range;
      return holding == nullptr;
    });
    return holding;
  }
  // The reservation, [base, base + bytes): nullopt before the first placement.
  std::optional<std::pair<uint64_t, uint64_t>> reservation() const {
    if (!base_) return std::nullopt;
    return std::make_pair(*base_, *base_ + va_bytes_);
  }
  // The end of the run of `pages` that holds page-aligned `address`, or `address` when none does.
  static uint64_t run_end_in(const IntervalSet& pages, uint64_t address);
  // Maps the missing pages of the placement's [address, +bytes) and takes the block out of its
  // free range (the free ranges must not have changed since place()). Returns the block's range,
  // the handle give_back() takes.
  // nullptr, with the block not taken (pages mapped so far stay, as free cache), when the device
  // has no room.
  // `extend_bytes`: also map up to that many more bytes of unmapped pages right after the block,
  // in the same call (growth in larger steps, fewer calls).
  suballoc::Range* take(const Placement& placement, uint64_t bytes, uint64_t extend_bytes = 0);
  // Returns a block to the free ranges, coalescing with its neighbours; its pages stay mapped.
  void give_back(suballoc::Range* block);
  // Unmaps whole free pages, never inside [keep_address, +keep_bytes), in as few calls as it can:
  // the smallest run of cached pages that holds `wanted` bytes, all of it; else the largest runs
  // first until at least `wanted` bytes are unmapped or none are left. Returns the bytes unmapped.
  // Pages in `keep_pages` (a step plan's) are never unmapped either.
  uint64_t reclaim(uint64_t wanted, uint64_t keep_address = 0, uint64_t keep_bytes = 0,
                   const IntervalSet* keep_pages = nullptr);
  // Unmaps every free page; with no live block left, also gives the reservation back.
  void release_all();

  uint64_t mapped_bytes() const { return mapped_bytes_; }
  // The mapped page ranges (a step plan prefers them: its first period then maps less).
  const IntervalSet& mapped_pages() const { return mapped_; }
  uint64_t live_bytes() const { return live_bytes_; }
  uint64_t page_bytes() const { return page_; }
  uint64_t page_ceil_of(uint64_t address) const { return page_ceil(address); }
  // Bytes of the pages that live blocks touch: what must stay mapped.
  uint64_t pinned_bytes() const;

 private:
  bool ensure_reserved();
  // take() from a range with unmapped pages: where pages must be mapped, and where none must.
  [[gnu::noinline]] suballoc::Range* take_growing(const Placement& placement, uint64_t bytes, uint64_t extend_bytes);
  suballoc::Range* take_from_growable(const Placement& placement, uint64_t bytes);
  // After a free-of-cost take() between the unmapped pages of range `slot`: an entry each side.
  [[gnu::noinline]] void split_growable(uint32_t slot, suballoc::Range* block);
  // give_back() next to a range with unmapped pages.
  [[gnu::noinline]] void give_back_by_growable(suballoc::Range* block);
  uint64_t unmapped_bytes_in(uint64_t start, uint64_t end) const;  // page-aligned range
  // A free-of-cost place for `bytes` in the smallest free range with unmapped pages.
  std::optional<Placement> place_growable(uint64_t bytes, bool from_top) const;
  // Within page-aligned [lo, hi): the lowest unmapped page (hi when none), the end of the highest
  // (lo when none). One lookup each.
  uint64_t first_unmapped_page(uint64_t lo, uint64_t hi) const;
  uint64_t unmapped_end(uint64_t lo, uint64_t hi) const;
  // growable_'s entry for the free `range`, from lookups: made, updated, or dropped when it has no
  // unmapped page.
  void index_growable(suballoc::Range* range);
  void list_growable(suballoc::Range* range, uint64_t first_unmapped, uint64_t unmapped_end);  // or update
  void unlist_growable(suballoc::Range* range);  // if listed
  // growable_[slot - 1] := `range`'s entry, given its lowest unmapped page and its highest's end.
  void put_growable(uint32_t slot, suballoc::Range* range, uint64_t first_unmapped, uint64_t unmapped_end);
  void drop_growable(uint32_t slot);  // the last entry moves into its place
  void note_unmapped(suballoc::Range* range, uint64_t start, uint64_t end);  // pages inside the free range
  // Bytes of the pages of [address, +bytes), inside the free `range`, that no live block touches.
  uint64_t footprint_of(const suballoc::Range& range, uint64_t address, uint64_t bytes) const;
  // A power-of-two page (every GPU's granularity) rounds with a mask: a 64-bit division costs
  // tens of cycles, and a placement rounds several times.
  uint64_t page_floor(uint64_t address) const {
    return page_mask_ != 0 ? address & ~page_mask_ : address / page_ * page_;
  }
  uint64_t page_ceil(uint64_t address) const { return page_floor(address + page_ - 1); }
  void add_mapped(uint64_t start, uint64_t end);
  void remove_mapped(uint64_t start, uint64_t end);

  Device& device_;
  uint64_t va_bytes_;
  uint64_t page_;
  uint64_t page_mask_;  // page_ - 1 when page_ is a power of two, else 0
  std::optional<uint64_t> base_;
  suballoc::BinnedRanges ranges_;
  IntervalSet mapped_;  // mapped page ranges
  // A range known to be all mapped (part of one entry of mapped_; empty when unknown): nearly
  // every placement falls inside the same large mapped range, and a B-tree lookup per candidate
  // cost a third of a placement. Growing mapped_ keeps it true; remove_mapped() forgets it.
  mutable std::pair<uint64_t, uint64_t> known_mapped_{0, 0};
  // The free ranges that have a whole unmapped page (the reservation's tail, holes that reclaims
  // unmapped pages in), each with its lowest unmapped page and the end of its highest (addresses:
  // a split or a merge on the other side leaves them as they are), and its place + 1 in
  // Range::owner_slot (0: every page of the range is mapped). Kept up to date where pages are
  // mapped (take) or unmapped (reclaim) and where free ranges split or merge, never by a walk.
  struct Growable {
    suballoc::Range* range;
    uint64_t first_unmapped;
    uint64_t unmapped_end;
  };
  std::vector<Growable> growable_;
  uint64_t mapped_bytes_ = 0;
  uint64_t live_bytes_ = 0;
};

// take() and give_back() run at every event: the checks that most of them need no more than
// BinnedRanges are inlined into the policy; the rest is out of line.
inline suballoc::Range* VmmArena::take(const Placement& placement, uint64_t bytes, uint64_t extend_bytes) {
  const uint64_t address = placement.address;
  suballoc::Range* const range = placement.range;
  // Only a range with unmapped pages can need new ones, and only its remainders can have any.
  if (range->owner_slot == 0) {
    live_bytes_ += bytes;
    return ranges_.carve(range, address, bytes);
  }
  if (placement.new_bytes > 0 || extend_bytes > 0) return take_growing(placement, bytes, extend_bytes);
  return take_from_growable(placement, bytes);
}

inline suballoc::Range* VmmArena::take_from_growable(const Placement& placement, uint64_t bytes) {
  const uint64_t address = placement.address;
  suballoc::Range* const range = placement.range;
  const uint32_t slot = range->owner_slot;
  // Free of cost: no page changes, and the range's unmapped pages lie below the block's pages (in
  // the left remainder), above them (in the right one), or both. The node becomes the block's; its
  // entry goes to the remainder that has them, unchanged but for the node.
  const bool left_grows = growable_[slot - 1].first_unmapped < page_floor(address);
  const bool right_grows = growable_[slot - 1].unmapped_end > page_ceil(address + bytes);
  range->owner_slot = 0;
  live_bytes_ += bytes;
  suballoc::Range* block = ranges_.carve(range, address, bytes);
  if (left_grows != right_grows) {
    suballoc::Range* rest = left_grows ? block->left : block->right;
    growable_[slot - 1].range = rest;
    rest->owner_slot = slot;
  } else if (left_grows) {
    split_growable(slot, block);
  } else {
    drop_growable(slot);
  }
  return block;
}

inline void VmmArena::give_back(suballoc::Range* block) {
  live_bytes_ -= block->size();
  // Only free ranges are listed in growable_.
  const suballoc::Range* left = block->left;
  const suballoc::Range* right = block->right;
  if ((left == nullptr || left->owner_slot == 0) && (right == nullptr || right->owner_slot == 0)) {
    ranges_.give_back(block);
    return;
  }
  give_back_by_growable(block);
}

}  // namespace memreplay::detail
