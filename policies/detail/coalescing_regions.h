// CoalescingRegions: device allocations ("regions") carved into chunks, the machinery TF's BFC
// allocator and RMM's pool resource share: best fit over free chunks ordered by (size, address),
// a split of the chosen chunk when the owner's rule says so, and coalescing with free neighbours
// in the same region on every free. Invariant, per region: Σ chunk sizes = region size.
// Each region is a chain of BinnedRanges: the free chunks sit in size bins (TF's BFC bins its
// free chunks by size too, each bin ordered by (size, address)).
// The owner decides when to grow (add_region) and which regions to give back (free_regions).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include <absl/container/btree_map.h>
#include <absl/container/flat_hash_map.h>

#include "policies/detail/binned_ranges.h"
#include "policies/device.h"

namespace memreplay::suballoc {

class CoalescingRegions {
 public:
  // split(chunk_size, request): whether to split a chunk of chunk_size for a request.
  using SplitRule = std::function<bool(uint64_t chunk_size, uint64_t request)>;
  CoalescingRegions(Device& device, SplitRule split) : device_(device), split_(std::move(split)) {}
  ~CoalescingRegions();
  CoalescingRegions(const CoalescingRegions&) = delete;
  CoalescingRegions& operator=(const CoalescingRegions&) = delete;

  struct Chunk {
    uint64_t address;
    uint64_t size;
  };
  // Best fit among free chunks of at least `bytes` (`bytes` already rounded by the owner);
  // nullopt when none is large enough. The chunk is taken (and split by the rule).
  std::optional<Chunk> allocate(uint64_t bytes);
  // Returns a live chunk; false when `address` is not one.
  bool free(uint64_t address);
  // cudaMalloc's a region of `bytes` (one free chunk). False when the device has no room.
  bool add_region(uint64_t bytes);
  // cudaFree's regions that are one free chunk, largest first, until `wanted` bytes are freed
  // (UINT64_MAX: all). Returns the bytes given back.
  uint64_t free_regions(uint64_t wanted = UINT64_MAX);

  uint64_t region_bytes() const { return region_bytes_; }

 private:
  Device& device_;
  SplitRule split_;
  BinnedRanges chunks_;  // every chunk; each region one chain
  absl::flat_hash_map<uint64_t, Range*> live_;  // live chunks by address
  absl::btree_map<uint64_t, uint64_t> regions_;  // region start -> size
  uint64_t region_bytes_ = 0;
};

}  // namespace memreplay::suballoc
