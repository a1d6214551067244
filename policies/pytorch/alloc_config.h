// PYTORCH_CUDA_ALLOC_CONF for the pytorch policy, parsed the way PyTorch 2.11 parses it
// (c10/core/AllocatorConfig.cpp + c10/cuda/CUDAAllocatorConfig.cpp, the "new" parser).
//
// Syntax: the shared policy option parser's (policies/detail/policy_options.h, PyTorch's tokenizer):
// comma-separated `key:value`, lists in `[...]`, whitespace ignored. PyTorch's keys keep PyTorch's
// spellings and units: sizes in MiB (`_mb`), booleans True / False only. Keys that change decisions:
//   large_segment_size_mb        > 10, default 20: large-pool segment size and large page size;
//                                read before every other key (it sets the minimum of the two below)
//   max_split_size_mb            >= large_segment_size_mb; default unlimited. Blocks >= it are
//                                "oversize": never split, reused only by requests within R of them
//   max_non_split_rounding_mb    >= large_segment_size_mb; R above, default large_segment_size_mb
//   roundup_power2_divisions     N (a power of two, all 16 intervals) or [b:n, ..., >:k]: b a power
//                                of two in MiB (interval log2 b, clamped to 15); the first entry also
//                                fills every interval below it; `>:k` fills from the interval after
//                                the last listed one (2.11 semantics); n is 0 or a power of two
//   garbage_collection_threshold in (0, 1); only acts under a per-process limit
//   expandable_segments          True / False
//   per_process_memory_fraction  in [0, 1]; a limit when < 1 (the device capacity wins if set)
// Accepted and ignored (no effect on sizes): backend:native, release_lock_on_cudamalloc,
// pinned_*, graph_capture_record_stream_reuse. backend:cudaMallocAsync is refused (that is the
// cuda_async policy). Anything else, or a bad value, is a PolicySpecError naming the option.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "base/units.h"

namespace memreplay::pytorch {

inline constexpr size_t kRoundUpPowerOfTwoIntervals = 16;  // 1 MiB ... 64 GiB, one per power of two

struct AllocConfig {
  uint64_t large_segment_size = 20 * kMiB;
  uint64_t max_split_size = std::numeric_limits<uint64_t>::max();  // "unlimited"
  uint64_t max_non_split_rounding_size = 20 * kMiB;
  // Divisions per interval: index i covers [2^i MiB, 2^(i+1) MiB); index 0 also everything below.
  std::array<uint64_t, kRoundUpPowerOfTwoIntervals> roundup_power2_divisions{};
  double garbage_collection_threshold = 0.0;  // 0 = off
  bool expandable_segments = false;
  double per_process_memory_fraction = 1.0;

  // The divisions that apply to a request of `bytes` (PyTorch's roundup_power2_divisions(size)).
  uint64_t divisions_for(uint64_t bytes) const {  // inline: every allocation asks
    // Interval index: floor(log2 bytes) - 20, clamped to [0, 15].
    const auto log_size = static_cast<size_t>(std::bit_width(bytes | 1) - 1);
    const size_t index = log_size > 20 ? std::min(log_size - 20, kRoundUpPowerOfTwoIntervals - 1) : 0;
    return roundup_power2_divisions[index];
  }
};

// Parses an option string exactly as a user writes PYTORCH_CUDA_ALLOC_CONF ("" gives the
// defaults). Throws PolicySpecError with a one-line message naming the offending option.
AllocConfig parse_alloc_config(std::string_view conf);

}  // namespace memreplay::pytorch
