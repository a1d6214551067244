// DriverAddressModel: where the CUDA driver puts a cudaMalloc, so that the simulator's segments
// sort the way real ones do. PyTorch's best fit breaks ties between equal free blocks by address,
// so the relative order of segment addresses changes which block it reuses.
//
// Fitted to the addresses the driver (580.159.04, H200) gave PyTorch's real allocator in all 35
// ground-truth replays (tools/gpu_torch_replay.py; docs/driver-address-model.md):
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
#include <optional>
#include <vector>

#include <absl/container/btree_map.h>
#include <absl/container/flat_hash_map.h>
#include <absl/container/inlined_vector.h>

#include "replayer/newest_fit_index.h"

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
    for (const auto& [address, live] : live_) f(address, live.bytes);
  }
  size_t live_count() const { return live_.size(); }

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
  struct Live {
    uint64_t span;
    uint64_t bytes;  // asked for
    uint32_t chunk;
  };

  struct Placement {
    uint64_t address;
    uint32_t chunk;
  };

  uint32_t add_chunk(uint64_t start, uint64_t end, bool permanent);
  std::optional<Placement> take_from_chunks(uint64_t span);
  std::optional<Placement> new_chunk(uint64_t span);

  absl::btree_map<uint64_t, uint64_t> va_free_;  // start -> end, disjoint, adjacent ones merged
  std::vector<Chunk> chunks_;                    // by id; ids of given-back chunks are reused
  std::vector<uint32_t> unused_ids_;
  NewestFitIndex room_;                          // chunk id -> its largest free range, newest first
  absl::flat_hash_map<uint64_t, Live> live_;     // address -> allocation
};

}  // namespace memreplay
