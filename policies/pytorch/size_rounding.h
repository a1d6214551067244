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

#include <bit>
#include <cstdint>

#include "policies/pytorch/alloc_config.h"

namespace memreplay::pytorch {

inline constexpr uint64_t kMinBlockSize = 512;  // every block is a multiple of this
inline constexpr uint64_t kSmallSize = 1 * kMiB;  // largest small-pool request
inline constexpr uint64_t kSmallBuffer = 2 * kMiB;  // small-pool segment and page size
inline constexpr uint64_t kMinLargeAlloc = 10 * kMiB;  // from here a segment fits its request
inline constexpr uint64_t kRoundLarge = 2 * kMiB;  // rounding unit of such segments

// Inline: every allocation asks.

// PyTorch's roundup_power2_next_division: `divisions` is a power of two >= 2.
inline uint64_t roundup_power2_next_division(uint64_t bytes, uint64_t divisions) {
  if (std::has_single_bit(bytes)) return bytes;
  const uint64_t floor = std::bit_floor(bytes);
  const uint64_t step = floor >> (std::bit_width(divisions) - 1);  // floor / divisions
  if (step == 0) return floor << 1;
  const uint64_t rounded_down = bytes & ~(step - 1);
  return rounded_down == bytes ? bytes : rounded_down + step;
}

inline uint64_t round_size(uint64_t bytes, const AllocConfig& config) {
  if (bytes < kMinBlockSize) return kMinBlockSize;
  const uint64_t divisions = config.divisions_for(bytes);
  if (divisions > 1 && bytes > kMinBlockSize * divisions) return roundup_power2_next_division(bytes, divisions);
  return kMinBlockSize * ((bytes + kMinBlockSize - 1) / kMinBlockSize);
}

inline uint64_t segment_size(uint64_t rounded, const AllocConfig& config) {
  if (rounded <= kSmallSize) return kSmallBuffer;
  if (rounded < kMinLargeAlloc) return config.large_segment_size;
  return kRoundLarge * ((rounded + kRoundLarge - 1) / kRoundLarge);
}
inline bool is_small_request(uint64_t rounded) { return rounded <= kSmallSize; }

}  // namespace memreplay::pytorch
