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
// Used by the `memreplay` policy (memreplay_policy.cpp) and by the `gmlake` model.
#pragma once

#include <bit>
#include <cstdint>
#include <optional>
#include <utility>

#include <absl/container/btree_map.h>

#include "policies/device.h"
#include "policies/suballoc/binned_ranges.h"

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
  // Where `bytes` would cost the fewest newly mapped pages; among equal costs the smallest free
  // range (best fit), then the lowest address. nullopt when the address space is exhausted.
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
  uint64_t reclaim(uint64_t wanted, uint64_t keep_address = 0, uint64_t keep_bytes = 0);
  // Unmaps every free page; with no live block left, also gives the reservation back.
  void release_all();

  uint64_t mapped_bytes() const { return mapped_bytes_; }
  uint64_t live_bytes() const { return live_bytes_; }
  uint64_t page_bytes() const { return page_; }
  // Bytes of the pages that live blocks touch: what must stay mapped.
  uint64_t pinned_bytes() const;

 private:
  bool ensure_reserved();
  uint64_t unmapped_bytes_in(uint64_t start, uint64_t end) const;  // page-aligned range
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
  absl::btree_map<uint64_t, uint64_t> mapped_;                 // page ranges start -> end, merged
  // A range known to be all mapped (part of one entry of mapped_; empty when unknown): nearly
  // every placement falls inside the same large mapped range, and a B-tree lookup per candidate
  // cost a third of a placement. Growing mapped_ keeps it true; remove_mapped() forgets it.
  mutable std::pair<uint64_t, uint64_t> known_mapped_{0, 0};
  uint64_t mapped_bytes_ = 0;
  uint64_t live_bytes_ = 0;
};

}  // namespace memreplay::detail
