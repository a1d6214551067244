#include "policies/memreplay/vmm_arena.h"

#include <algorithm>
#include <vector>

namespace memreplay::detail {

VmmArena::VmmArena(Device& device, uint64_t va_bytes)
    : device_(device),
      va_bytes_(va_bytes),
      page_(device.granularity()),
      page_mask_(std::has_single_bit(page_) && page_ > 1 ? page_ - 1 : 0) {
  va_bytes_ = page_ceil(va_bytes_);
}

// What is still mapped or reserved when a replay ends stays with the Device, which gives it back
// when it goes (CudaDevice::release_everything); a policy does not outlive its device.
VmmArena::~VmmArena() = default;

bool VmmArena::ensure_reserved() {
  if (base_) return true;
  base_ = device_.reserve_address(va_bytes_);
  if (!base_) return false;
  list_growable(ranges_.add_chain(*base_, *base_ + va_bytes_), *base_, *base_ + va_bytes_);
  return true;
}

uint64_t VmmArena::unmapped_bytes_in(uint64_t start, uint64_t end) const {
  if (known_mapped_.first <= start && end <= known_mapped_.second) return 0;
  uint64_t covered = 0;
  auto it = mapped_.upper_bound(start);
  if (it != mapped_.begin()) --it;
  if (it != mapped_.end() && it->first <= start && end <= it->second) {
    known_mapped_ = *it;
    return 0;
  }
  for (; it != mapped_.end() && it->first < end; ++it)
    if (it->second > start) covered += std::min(end, it->second) - std::max(start, it->first);
  return (end - start) - covered;
}

// Inlined into place(), its one caller: it runs at nearly every placement.
[[gnu::always_inline]] inline std::optional<VmmArena::Placement> VmmArena::place_growable(uint64_t bytes,
                                                                                          bool from_top) const {
  // What the block leaves in such a range stays contiguous with pages that can still be mapped
  // (growth room), where what it would leave in a hole between live blocks, smaller than the
  // requests that follow, is stranded mapped memory. The list is short (the reservation's tail and
  // the holes that reclaims unmapped pages in), and each entry knows its lowest and highest
  // unmapped page: no lookup in mapped_, no walk over every free range.
  const Growable* growing = nullptr;
  uint64_t growing_size = 0;
  for (const Growable& entry : growable_) {
    // Free of cost at the low end when the block ends by the range's lowest unmapped page, at the
    // high end when it starts after the end of its highest (both lie inside the range).
    const suballoc::Range& range = *entry.range;
    if (bytes > entry.first_unmapped - range.start && bytes > range.end - entry.unmapped_end) continue;
    const uint64_t size = range.size();
    if (growing != nullptr && (size > growing_size || (size == growing_size && range.start >= growing->range->start)))
      continue;
    growing = &entry;
    growing_size = size;
  }
  if (growing == nullptr) return std::nullopt;
  const suballoc::Range& range = *growing->range;
  const bool low_free = bytes <= growing->first_unmapped - range.start;
  const bool high_free = bytes <= range.end - growing->unmapped_end;
  const bool at_top = from_top ? high_free : !low_free;
  return Placement{at_top ? range.end - bytes : range.start, 0, growing->range};
}

std::optional<VmmArena::Placement> VmmArena::place(uint64_t bytes, bool from_top) {
  if (!ensure_reserved()) return std::nullopt;
  std::optional<Placement> best;
  bool growable_tried = false;
  ranges_.for_each_fit(bytes, [&](suballoc::Range* range) {
    // Ranges the block fills exactly come first; past them, a free-of-cost place in a range with
    // unmapped pages beats every other (see place_growable).
    if (!growable_tried && range->size() != bytes) {
      growable_tried = true;
      if (const auto growing = place_growable(bytes, from_top)) {
        best = growing;
        return false;
      }
    }
    // At the range's start, and (for ranges with mapped pages at their end) flush with its end.
    const uint64_t low = range->start;
    const uint64_t high = range->end - bytes;
    for (const uint64_t address : {from_top ? high : low, from_top ? low : high}) {
      // A range with no unmapped page costs nothing anywhere (the pages at its edges are touched
      // by its live neighbours).
      const uint64_t cost =
          range->owner_slot == 0 ? 0 : unmapped_bytes_in(page_floor(address), page_ceil(address + bytes));
      if (!best || cost < best->new_bytes) best = Placement{address, cost, range};
      if (cost == 0 || low == high) break;
    }
    return best->new_bytes != 0;  // best fit among the ranges that cost nothing
  });
  return best;
}

uint64_t VmmArena::first_unmapped_page(uint64_t lo, uint64_t hi) const {
  auto it = mapped_.upper_bound(lo);
  if (it != mapped_.begin() && std::prev(it)->second > lo) lo = std::prev(it)->second;  // mapped_ is merged
  return std::min(lo, hi);
}

uint64_t VmmArena::unmapped_end(uint64_t lo, uint64_t hi) const {
  auto it = mapped_.lower_bound(hi);
  if (it != mapped_.begin() && std::prev(it)->second >= hi) hi = std::prev(it)->first;
  return std::max(lo, hi);
}

void VmmArena::index_growable(suballoc::Range* range) {
  const uint64_t lo = page_ceil(range->start);
  const uint64_t hi = page_floor(range->end);
  const uint64_t first = lo < hi ? first_unmapped_page(lo, hi) : hi;
  if (first >= hi) {
    unlist_growable(range);
    return;
  }
  list_growable(range, first, unmapped_end(lo, hi));
}

void VmmArena::put_growable(uint32_t slot, suballoc::Range* range, uint64_t first_unmapped, uint64_t unmapped_end) {
  growable_[slot - 1] = Growable{range, first_unmapped, unmapped_end};
  range->owner_slot = slot;
}

void VmmArena::list_growable(suballoc::Range* range, uint64_t first_unmapped, uint64_t unmapped_end) {
  if (range->owner_slot == 0) {
    growable_.emplace_back();
    range->owner_slot = static_cast<uint32_t>(growable_.size());
  }
  put_growable(range->owner_slot, range, first_unmapped, unmapped_end);
}

void VmmArena::drop_growable(uint32_t slot) {
  if (slot != growable_.size()) {  // the last entry takes its place
    growable_[slot - 1] = growable_.back();
    growable_[slot - 1].range->owner_slot = slot;
  }
  growable_.pop_back();
}

void VmmArena::unlist_growable(suballoc::Range* range) {
  const uint32_t slot = range->owner_slot;
  if (slot == 0) return;
  range->owner_slot = 0;
  drop_growable(slot);
}

std::optional<VmmArena::Placement> VmmArena::place_among_mapped(uint64_t bytes, const Placement& best) {
  // Inside a free range the mapped pages need not be contiguous (reclaims unmap runs in the middle
  // of one): a window covers the most of them where it starts at a mapped run's start or ends at
  // one's end, so those are the only other places to try. Among equal costs the shortest run
  // wins (best fit among cached runs): a block placed in a long run cuts it, and a later reclaim
  // then needs several runs, an unmap each, where the whole run would have been one.
  std::optional<Placement> better;
  uint64_t cheapest = best.new_bytes;
  uint64_t shortest_run = UINT64_MAX;
  ranges_.for_each_fit(bytes, [&](suballoc::Range* range) {
    const uint64_t low = range->start;
    const uint64_t high = range->end - bytes;
    auto it = mapped_.upper_bound(low);
    if (it != mapped_.begin()) --it;
    for (; it != mapped_.end() && it->first < range->end; ++it) {
      if (it->second <= low) continue;
      const uint64_t run = std::min(it->second, range->end) - std::max(it->first, low);
      for (const uint64_t address :
           {std::clamp(it->first, low, high), std::clamp(it->second, low + bytes, high + bytes) - bytes}) {
        const uint64_t cost = unmapped_bytes_in(page_floor(address), page_ceil(address + bytes));
        if (cost < cheapest || (better && cost == cheapest && run < shortest_run)) {
          better = Placement{address, cost, range};
          cheapest = cost;
          shortest_run = run;
        }
      }
    }
    return true;  // a shorter run may lie in a larger range
  });
  return better;
}

uint64_t VmmArena::footprint_of(const suballoc::Range& range, uint64_t address, uint64_t bytes) const {
  const uint64_t lo = page_floor(address);
  const uint64_t hi = page_ceil(address + bytes);
  // A free range's neighbours are live blocks (free ranges coalesce): the page holding an
  // unaligned start or end of the range is touched by one.
  const bool first_touched = lo < range.start;
  const bool last_touched = hi > range.end;
  if (hi - lo == page_) return first_touched || last_touched ? 0 : page_;
  return hi - lo - (first_touched ? page_ : 0) - (last_touched ? page_ : 0);
}

std::optional<VmmArena::Placement> VmmArena::place_tightest(uint64_t bytes) {
  if (!ensure_reserved()) return std::nullopt;
  std::optional<Placement> best;
  uint64_t best_footprint = 0;
  // No placement touches fewer new pages than those it spans, less one shared page at each end.
  const uint64_t spanned = page_ceil(bytes) / page_;
  const uint64_t floor_footprint = spanned > 2 ? (spanned - 2) * page_ : 0;
  ranges_.for_each_fit(bytes, [&](suballoc::Range* range) {
    for (const uint64_t address : {range->start, range->end - bytes}) {
      const uint64_t footprint = footprint_of(*range, address, bytes);
      if (best && footprint > best_footprint) continue;
      const uint64_t cost = unmapped_bytes_in(page_floor(address), page_ceil(address + bytes));
      if (!best || footprint < best_footprint || cost < best->new_bytes) {
        best = Placement{address, cost, range};
        best_footprint = footprint;
      }
    }
    return best_footprint > floor_footprint || best->new_bytes > 0;
  });
  return best;
}

std::optional<VmmArena::Placement> VmmArena::place_tighter(uint64_t bytes, const Placement& best) {
  uint64_t least = footprint_of(*best.range, best.address, bytes);
  if (least == 0) return std::nullopt;
  std::optional<Placement> better;
  uint64_t smallest_range = UINT64_MAX;
  ranges_.for_each_fit(bytes, [&](suballoc::Range* range) {
    for (const uint64_t address : {range->start, range->end - bytes}) {
      const uint64_t footprint = footprint_of(*range, address, bytes);
      if (footprint > least || (footprint == least && range->size() >= smallest_range)) continue;
      const uint64_t cost =
          range->owner_slot == 0 ? 0 : unmapped_bytes_in(page_floor(address), page_ceil(address + bytes));
      if (cost > best.new_bytes) continue;
      better = Placement{address, cost, range};
      least = footprint;
      smallest_range = range->size();
    }
    return true;  // a smaller range may come later
  });
  return better;
}

std::optional<VmmArena::Placement> VmmArena::place_aligned(uint64_t bytes, const Placement& best) const {
  const suballoc::Range& range = *best.range;
  const uint64_t address = best.address;
  if (bytes % page_ != 0 || page_floor(address) == address) return std::nullopt;
  const uint64_t footprint = footprint_of(range, address, bytes);
  for (const uint64_t aligned : {page_ceil(address), page_floor(address)}) {
    if (aligned < range.start || aligned > range.end - bytes) continue;
    if (footprint_of(range, aligned, bytes) > footprint) continue;
    if (range.owner_slot != 0 && unmapped_bytes_in(aligned, aligned + bytes) > best.new_bytes) continue;
    return Placement{aligned, best.new_bytes, best.range};
  }
  return std::nullopt;
}

uint64_t VmmArena::pinned_bytes() const {
  if (!base_) return 0;
  uint64_t untouched = 0;
  for (const auto& [start, end] : ranges_.free_in_chain(*base_))
    if (page_floor(end) > page_ceil(start)) untouched += page_floor(end) - page_ceil(start);
  return va_bytes_ - untouched;
}

void VmmArena::split_growable(uint32_t slot, suballoc::Range* block) {
  suballoc::Range* left = block->left;
  suballoc::Range* right = block->right;
  const uint64_t first = growable_[slot - 1].first_unmapped;
  const uint64_t end = growable_[slot - 1].unmapped_end;
  const uint64_t block_lo = page_floor(block->start);
  const uint64_t block_hi = page_ceil(block->end);
  put_growable(slot, left, first, unmapped_end(page_ceil(left->start), block_lo));
  list_growable(right, first_unmapped_page(block_hi, page_floor(right->end)), end);
}

suballoc::Range* VmmArena::take_growing(const Placement& placement, uint64_t bytes, uint64_t extend_bytes) {
  const uint64_t address = placement.address;
  suballoc::Range* const range = placement.range;
  const uint64_t range_end = range->end;
  const uint64_t lo = page_floor(address);
  uint64_t hi = page_ceil(address + bytes);
  if (extend_bytes > 0) {
    // Only over pages that are unmapped and free, up to the next mapped page.
    const auto next_mapped = mapped_.lower_bound(hi);
    const bool page_after_mapped = (next_mapped != mapped_.end() && next_mapped->first == hi) ||
                                   (next_mapped != mapped_.begin() && std::prev(next_mapped)->second > hi);
    if (!page_after_mapped) {
      uint64_t limit = page_floor(range_end);
      if (next_mapped != mapped_.end()) limit = std::min(limit, next_mapped->first);
      hi = std::max(hi, std::min(limit, hi + page_ceil(extend_bytes)));
    }
  }
  // Map each unmapped gap of [lo, hi).
  uint64_t cursor = lo;
  while (cursor < hi) {
    auto it = mapped_.upper_bound(cursor);
    if (it != mapped_.begin() && std::prev(it)->second > cursor) {
      cursor = std::prev(it)->second;
      continue;
    }
    const uint64_t gap_end = it == mapped_.end() ? hi : std::min(hi, it->first);
    if (!device_.map(cursor, gap_end - cursor)) {
      index_growable(range);
      return nullptr;
    }
    add_mapped(cursor, gap_end);
    cursor = gap_end;
  }
  live_bytes_ += bytes;
  const uint64_t range_start = range->start;
  unlist_growable(range);  // the node becomes the block's; the remainders are looked up (rare)
  suballoc::Range* block = ranges_.carve(range, address, bytes);
  if (range_start < address) index_growable(block->left);
  if (address + bytes < range_end) index_growable(block->right);
  return block;
}

void VmmArena::give_back_by_growable(suballoc::Range* block) {
  // The block's pages are mapped: the merged range's unmapped pages are its neighbours'.
  const uint32_t left_slot = block->left != nullptr ? block->left->owner_slot : 0;
  const uint32_t right_slot = block->right != nullptr ? block->right->owner_slot : 0;
  suballoc::Range* merged = ranges_.give_back(block);  // a free right neighbour's node is gone
  if (left_slot == 0) {  // the right neighbour's entry, now the merged range's
    growable_[right_slot - 1].range = merged;
    merged->owner_slot = right_slot;
    return;
  }
  if (right_slot == 0) return;  // merged is the left neighbour, its unmapped pages the same
  growable_[left_slot - 1].unmapped_end = growable_[right_slot - 1].unmapped_end;
  drop_growable(right_slot);  // (may move the left neighbour's entry: last)
}

std::optional<VmmArena::Placement> VmmArena::place_in(const suballoc::Range* range, uint64_t address,
                                                      uint64_t bytes) const {
  if (range == nullptr || !range->free || address < range->start || address > range->end ||
      range->end - address < bytes)
    return std::nullopt;
  const uint64_t cost = range->owner_slot == 0 ? 0 : unmapped_bytes_in(page_floor(address), page_ceil(address + bytes));
  return Placement{address, cost, const_cast<suballoc::Range*>(range)};
}

uint64_t VmmArena::run_end_in(const IntervalSet& pages, uint64_t address) {
  auto it = pages.upper_bound(address);
  if (it == pages.begin()) return address;
  --it;
  return it->second > address ? it->second : address;
}

uint64_t VmmArena::reclaim(uint64_t wanted, uint64_t keep_address, uint64_t keep_bytes, const IntervalSet* keep_pages) {
  if (!base_) return 0;  // nothing reserved, nothing mapped
  const uint64_t keep_lo = page_floor(keep_address);
  const uint64_t keep_hi = keep_bytes == 0 ? keep_lo : page_ceil(keep_address + keep_bytes);
  // Runs of mapped pages that lie wholly inside a free range, outside the kept pages, each with
  // its free range (which has unmapped pages once the run is unmapped).
  struct Run {
    uint64_t start, end;
    suballoc::Range* range;
  };
  std::vector<Run> runs;
  suballoc::Range* in_range = nullptr;
  const auto add_runs = [&](uint64_t lo, uint64_t hi) {
    if (lo >= hi) return;
    auto it = mapped_.upper_bound(lo);
    if (it != mapped_.begin()) --it;
    for (; it != mapped_.end() && it->first < hi; ++it) {
      uint64_t s = std::max(lo, it->first);
      const uint64_t e = std::min(hi, it->second);
      if (s >= e) continue;
      if (keep_pages != nullptr) {  // the pieces of [s, e) outside the kept pages
        auto kept = keep_pages->upper_bound(s);
        if (kept != keep_pages->begin() && std::prev(kept)->second > s) --kept;
        for (; kept != keep_pages->end() && kept->first < e; ++kept) {
          if (kept->first > s) runs.push_back({s, kept->first, in_range});
          s = std::max(s, kept->second);
        }
      }
      if (s < e) runs.push_back({s, e, in_range});
    }
  };
  for (suballoc::Range* range = ranges_.chain_head(*base_); range != nullptr; range = range->right) {
    if (!range->free) continue;
    in_range = range;
    const uint64_t lo = page_ceil(range->start);
    const uint64_t hi = page_floor(range->end);
    if (keep_lo < keep_hi && lo < keep_hi && keep_lo < hi) {
      add_runs(lo, keep_lo);
      add_runs(keep_hi, hi);
    } else {
      add_runs(lo, hi);
    }
  }
  // One call where one run suffices: the smallest run that holds `wanted`, unmapped whole (a run
  // cut in part leaves a piece that the next move cuts again, a call each time; the room left
  // over serves the next growths without an unmap); else the largest runs first.
  std::sort(runs.begin(), runs.end(), [](const Run& a, const Run& b) { return a.end - a.start > b.end - b.start; });
  const uint64_t wanted_pages = wanted == UINT64_MAX ? wanted : page_ceil(wanted);
  auto fit = runs.end();
  for (auto it = runs.begin(); it != runs.end() && it->end - it->start >= wanted_pages; ++it) fit = it;
  if (fit != runs.end()) {
    device_.unmap(fit->start, fit->end - fit->start);
    remove_mapped(fit->start, fit->end);
    note_unmapped(fit->range, fit->start, fit->end);
    return fit->end - fit->start;
  }
  uint64_t unmapped = 0;
  for (const Run& run : runs) {
    if (unmapped >= wanted) break;
    const uint64_t cut = std::min(run.end - run.start, wanted_pages - unmapped);
    device_.unmap(run.end - cut, cut);
    remove_mapped(run.end - cut, run.end);
    note_unmapped(run.range, run.end - cut, run.end);
    unmapped += cut;
  }
  return unmapped;
}

void VmmArena::release_all() {
  reclaim(UINT64_MAX);
  if (live_bytes_ == 0 && base_) {
    device_.release_address(*base_, va_bytes_);
    base_.reset();
    ranges_.clear();
    growable_.clear();
  }
}

void VmmArena::note_unmapped(suballoc::Range* range, uint64_t start, uint64_t end) {
  if (range->owner_slot == 0) {
    list_growable(range, start, end);
    return;
  }
  const Growable& entry = growable_[range->owner_slot - 1];
  list_growable(range, std::min(entry.first_unmapped, start), std::max(entry.unmapped_end, end));
}

void VmmArena::add_mapped(uint64_t start, uint64_t end) {
  mapped_bytes_ += end - start;
  mapped_.insert(start, end);  // pages map once: never an overlap
}

void VmmArena::remove_mapped(uint64_t start, uint64_t end) {
  mapped_bytes_ -= end - start;
  known_mapped_ = {0, 0};
  mapped_.erase(start, end);  // a run of mapped pages: inside one range
}

}  // namespace memreplay::detail
