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

#include <absl/container/btree_map.h>
#include <absl/container/flat_hash_map.h>

namespace memreplay {

class DriverAddressModel {
 public:
  DriverAddressModel(uint64_t top, uint64_t va_bytes);

  // The address of a new allocation of `bytes`; nullopt when the VA is exhausted.
  std::optional<uint64_t> allocate(uint64_t bytes);
  // Frees an address allocate() returned; false if it never did (or already freed).
  bool release(uint64_t address);
  // VA the allocation at `address` occupies (bytes rounded up to the 2 MiB page); 0 if unknown.
  uint64_t span_of(uint64_t address) const;

  static constexpr uint64_t kPage = 2ull << 20;
  static constexpr uint64_t kChunkUnit = 32ull << 20;

 private:
  // B-trees, not std::map: no allocation per range, and a device call per event in passthrough.
  using Ranges = absl::btree_map<uint64_t, uint64_t>;  // start -> end, disjoint, adjacent ones merged
  struct Chunk {
    uint64_t end;
    uint64_t live = 0;
    Ranges free;
    bool permanent = false;  // the driver's own: never given back
    uint64_t created = 0;    // order of creation: newer chunks are searched first
    uint64_t largest_free = 0;
  };

  void add_chunk(uint64_t start, Chunk chunk);
  void update_room(uint64_t start, Chunk& chunk);  // after its free ranges changed

  std::optional<uint64_t> take_from_chunks(uint64_t span);
  std::optional<uint64_t> new_chunk(uint64_t span);

  Ranges va_free_;
  absl::btree_map<uint64_t, Chunk> chunks_;            // by start address
  absl::btree_map<uint64_t, uint64_t> with_room_;      // created -> start, of chunks with free space
  uint64_t chunks_created_ = 0;
  absl::flat_hash_map<uint64_t, uint64_t> live_;           // address -> span
};

}  // namespace memreplay
