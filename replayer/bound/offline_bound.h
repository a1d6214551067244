// The floor for a trace: what an allocator that knew every lifetime in advance would need.
//
//   requested peak      the most bytes live at once: no allocator can use less (the trivial floor);
//   static placement    an offset for every block, fixed for its whole life, so that blocks that
//                       live at the same time never overlap: the offline dynamic-storage-allocation
//                       problem (NP-hard). We use greedy by size (Sekiyama et al. 2018; TFLite's
//                       GreedyBySize): blocks in decreasing size, each at the lowest offset free
//                       over its lifetime. Its footprint is achievable, so the true optimum lies
//                       between the requested peak and it. "Lowest free offset over a lifetime"
//                       is answered by occupancy_tree.h (a segment tree over time of merged offset
//                       ranges), not by sorting every block the lifetime collides with.
// Both on the requested sizes and on sizes rounded up to 512 bytes (what every caching allocator
// hands out at least). Lifetimes are in replay events (alloc and free_completed, as `oom_at_event`
// counts them): [lower, upper), a block never freed lives to the end; blocks live at the trace's
// start (ring-buffer traces) from 0. They export as MiniMalloc's CSV (id,lower,upper,size) for
// exact solvers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace memreplay {

struct Lifetime {
  uint64_t id = 0;  // the block's allocation order
  uint64_t lower = 0;  // replay event of its alloc
  uint64_t upper = 0;  // replay event of its free (exclusive)
  uint64_t size = 0;  // requested bytes
};

// The lifetimes of one recorded device's blocks. Throws InputError for a bad trace (a free of an
// address that is not live, an alloc over a live one), naming the event.
std::vector<Lifetime> read_lifetimes(const std::string& trace_path, uint32_t trace_device = 0);

// Peak of Σ size over blocks alive at once, with sizes rounded up to `rounding`.
uint64_t live_peak(const std::vector<Lifetime>& blocks, uint64_t rounding = 1);
// Greedy-by-size placement: the footprint (max offset + size) with sizes rounded up to `rounding`.
// `offsets` (optional) receives each block's offset, in the order of `blocks`.
uint64_t greedy_by_size(const std::vector<Lifetime>& blocks, uint64_t rounding = 1,
                        std::vector<uint64_t>* offsets = nullptr);

struct OfflineBound {
  uint64_t blocks = 0;
  uint64_t events = 0;  // replay events (the time axis)
  uint64_t requested_peak = 0;
  uint64_t rounded_peak = 0;  // live peak of 512-rounded sizes
  uint64_t greedy_requested = 0;  // static placement, requested sizes
  uint64_t greedy_rounded = 0;  // static placement, 512-rounded sizes
  double seconds = 0;  // time to compute the placements
};
OfflineBound compute_bound(const std::vector<Lifetime>& blocks);
// What `memreplay bound --json` writes (and memreplay.bound returns) for the bound of `trace`;
// `minimalloc`, where not empty, is the CSV its lifetimes were written to (else "minimalloc": null).
nlohmann::json to_json(const OfflineBound& bound, const std::string& trace, const std::string& minimalloc = {});

// MiniMalloc's input CSV: "id,lower,upper,size" and one row per block. Written through a temporary
// file renamed into place, so a failed write leaves nothing behind; InputError when it fails.
void write_minimalloc_csv(const std::vector<Lifetime>& blocks, const std::string& path);

}  // namespace memreplay
