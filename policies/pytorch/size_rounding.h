// Request rounding and segment sizes of PyTorch's caching allocator (2.11).
//
//   round_size(n):   n < 512 -> 512; else with d = divisions of n's interval (AllocConfig):
//                    d > 1 and n > 512*d -> the next of d equal steps between the powers of two
//                    around n (a power of two stays itself); otherwise n rounded up to 512.
//                    Example: 5,000,000 with d = 4 -> steps of 1 MiB above 4 MiB -> 5,242,880.
//   pool:            rounded size <= 1 MiB -> small pool, else large pool.
//   segment_size(s): s <= 1 MiB -> 2 MiB; s < 10 MiB -> large_segment_size (20 MiB);
//                    else s rounded up to 2 MiB. Every segment is a multiple of 2 MiB.
#pragma once

#include <cstdint>

#include "policies/pytorch/alloc_config.h"

namespace memreplay::pytorch {

inline constexpr uint64_t kMinBlockSize = 512;          // every block is a multiple of this
inline constexpr uint64_t kSmallSize = 1 * kMiB;        // largest small-pool request
inline constexpr uint64_t kSmallBuffer = 2 * kMiB;      // small-pool segment and page size
inline constexpr uint64_t kMinLargeAlloc = 10 * kMiB;   // from here a segment fits its request
inline constexpr uint64_t kRoundLarge = 2 * kMiB;       // rounding unit of such segments

// PyTorch's roundup_power2_next_division: `divisions` is a power of two >= 2.
uint64_t roundup_power2_next_division(uint64_t bytes, uint64_t divisions);
uint64_t round_size(uint64_t bytes, const AllocConfig& config);
uint64_t segment_size(uint64_t rounded, const AllocConfig& config);
inline bool is_small_request(uint64_t rounded) { return rounded <= kSmallSize; }

}  // namespace memreplay::pytorch
