// Which allocator setting to recommend for one job, from replays of it under several: the lowest
// reserved peak among the settings that did not run out of memory and whose device calls
// (cudaMalloc + cudaFree, map + unmap) stay within a stated factor of the current setting's. A
// setting that saves memory by calling the driver far more often trades one cost for another,
// and is not offered.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

namespace memreplay::results {

struct SettingOutcome {
  uint64_t reserved_peak = 0;
  uint64_t device_calls = 0;  // device_alloc_calls + device_free_calls
  bool failed = false;  // ran out of memory
};

// The default: a setting may make up to four times the current setting's device calls (the
// ratio compare's recommendation allows).
inline constexpr double kDeviceCallFactor = 4.0;

// The index of the recommended setting in `settings`, nullopt when none qualifies. A setting
// qualifies when it did not fail and its device calls are at most `device_call_factor` times the
// current setting's (at least 1, so a current setting with no calls allows a few). Among those,
// the lowest reserved peak; ties go to fewer device calls, then to the current setting, then to
// the first.
std::optional<size_t> best_setting(std::span<const SettingOutcome> settings, size_t current,
                                   double device_call_factor = kDeviceCallFactor);

}  // namespace memreplay::results
