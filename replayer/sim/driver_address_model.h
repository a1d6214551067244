// DriverAddressModel: where the CUDA driver puts a cudaMalloc, so that the simulator's segments
// sort the way real ones do. PyTorch's best fit breaks ties between equal free blocks by address,
// so the relative order of segment addresses changes which block it reuses.
//
// Fitted to the addresses the driver (580.159.04, H200) gave PyTorch's real allocator in all 35
// ground-truth replays (tools/gpu/torch_replay.py; docs/driver-address-model.md):
//
//   VA ──────────────────────────────────────────────────────────────────────────────► higher
//   ... free VA ... [chunk][chunk ][chunk][  chunk  ] top ... [driver's own, with two holes]
//                     ▲ new chunks are cut from the top of the highest free VA range that fits
//
// - A cudaMalloc is rounded up to 2 MiB and goes into a chunk. The chunks are searched newest
//   first; in the first chunk with room, the smallest free range that fits wins (the lower one on a
//   tie), and the allocation takes its bottom.
// - With no room in any chunk, a new chunk of the size rounded up to 32 MiB is cut from the top of
//   the highest free VA range that is larger than it (one exactly as large is passed over, as the
//   kernel's top-down mmap does with a mapping that asks for alignment slack); the allocation takes
//   its bottom, the rest stays free for later allocations.
// - cudaFree returns the range to its chunk; a chunk left empty gives its VA back (merged with free
//   neighbours).
// - At context creation the driver has taken the VA above the heap for itself, leaving two holes
//   that the first small allocations fill: 2 MiB at top+414 MiB and 24 MiB at top+488 MiB (the
//   data bound the second to 20..26 MiB).
// Only relative order matters: the window's absolute position is arbitrary.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include <absl/container/inlined_vector.h>

#include "policies/detail/interval_set.h"
#include "replayer/sim/newest_fit_index.h"

namespace memreplay {

class DriverAddressModel {
 public:
  DriverAddressModel(uint64_t top, uint64_t va_bytes);

  // The address of a new allocation of `bytes`; nullopt when the VA is exhausted.
  std::optional<uint64_t> allocate(uint64_t bytes);
  // Frees an address allocate() returned: the bytes it asked for; nullopt if it never returned it
  // (or it is already freed).
  std::optional<uint64_t> release(uint64_t address);
  // VA the allocation at `address` occupies (bytes rounded up to the 2 MiB page); 0 if unknown.
  uint64_t span_of(uint64_t address) const;
  // Calls f(address, bytes asked for) for every live allocation, in no particular order.
  template <class F>
  void for_each_live(F&& f) const {
    for (size_t leaf = 0; leaf < live_pages_.size(); ++leaf) {
      if (!live_pages_[leaf]) continue;
      for (size_t i = 0; i < kLeafPages; ++i)
        if (live_pages_[leaf][i].pages != 0) f(address_of(leaf * kLeafPages + i), live_pages_[leaf][i].bytes);
    }
  }
  size_t live_count() const { return live_count_; }

  static constexpr uint64_t kPage = 2ull << 20;
  static constexpr uint64_t kChunkUnit = 32ull << 20;

 private:
  struct Range {
    uint64_t start;
    uint64_t end;
  };
  // A chunk holds a few free ranges (at most one per two pages, 8 in a 32 MiB chunk): a sorted
  // inline array scans faster than any tree and allocates nothing.
  struct Chunk {
    uint64_t start = 0;
    uint64_t end = 0;
    uint64_t live = 0;
    uint64_t largest_free = 0;
    bool permanent = false;  // the driver's own: never given back
    absl::InlinedVector<Range, 4> free;  // by address, disjoint, adjacent ones merged
  };
  // An allocation, at the page it starts on.
  struct Live {
    uint32_t pages = 0;  // its span in 2 MiB pages; 0: no allocation starts here
    uint32_t chunk = 0;
    uint64_t bytes = 0;  // asked for
  };
  // The live allocations by page, in leaves of kLeafPages allocated when first used: two loads
  // instead of a hash lookup per call (every address the model gives is page-aligned in its window).
  static constexpr size_t kLeafPages = 512;  // 1 GiB of VA per leaf: few leaves in use to scan
  // The slot of the page at `address`; nullptr outside the window, off a page, or (unless
  // `create`) in a leaf never used.
  Live* live_at(uint64_t address, bool create);
  const Live* live_at(uint64_t address) const;
  // Off the hot path, so that live_at inlines: a leaf is made once per GiB of VA first used.
  [[gnu::noinline]] Live* make_leaf(size_t leaf);
  uint64_t address_of(size_t page) const { return window_base_ + page * kPage; }

  struct Placement {
    uint64_t address;
    uint32_t chunk;
  };

  uint32_t add_chunk(uint64_t start, uint64_t end, bool permanent);
  std::optional<Placement> take_from_chunks(uint64_t span);
  std::optional<Placement> new_chunk(uint64_t span);

  detail::IntervalSet va_free_;  // the VA no chunk holds
  std::vector<Chunk> chunks_;  // by id; ids of given-back chunks are reused
  std::vector<uint32_t> unused_ids_;
  NewestFitIndex room_;  // chunk id -> its largest free range, newest first
  uint64_t window_base_;  // the lowest page the model can place
  size_t window_pages_;  // up to the top of the driver's own chunks
  std::vector<std::unique_ptr<Live[]>> live_pages_;  // page / kLeafPages -> leaf
  size_t live_count_ = 0;
};

}  // namespace memreplay
