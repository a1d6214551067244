// round_size / segment_size of PyTorch's caching allocator; the rules are in size_rounding.h.
#include "policies/pytorch/size_rounding.h"

#include <bit>

namespace memreplay::pytorch {

uint64_t roundup_power2_next_division(uint64_t bytes, uint64_t divisions) {
  if (std::has_single_bit(bytes)) return bytes;
  const uint64_t floor = std::bit_floor(bytes);
  const uint64_t step = floor >> (std::bit_width(divisions) - 1);  // floor / divisions
  if (step == 0) return floor << 1;
  const uint64_t rounded_down = bytes & ~(step - 1);
  return rounded_down == bytes ? bytes : rounded_down + step;
}

uint64_t round_size(uint64_t bytes, const AllocConfig& config) {
  if (bytes < kMinBlockSize) return kMinBlockSize;
  const uint64_t divisions = config.divisions_for(bytes);
  if (divisions > 1 && bytes > kMinBlockSize * divisions) return roundup_power2_next_division(bytes, divisions);
  return kMinBlockSize * ((bytes + kMinBlockSize - 1) / kMinBlockSize);
}

uint64_t segment_size(uint64_t rounded, const AllocConfig& config) {
  if (rounded <= kSmallSize) return kSmallBuffer;
  if (rounded < kMinLargeAlloc) return config.large_segment_size;
  return kRoundLarge * ((rounded + kRoundLarge - 1) / kRoundLarge);
}

}  // namespace memreplay::pytorch
