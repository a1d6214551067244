// rmm_pool's model (rmm_pool_policy.cpp) for the RMM policies built over a pool, as RMM builds
// them: rmm_binning hands its requests above max_bin, and its bins' batches, to one. The pool's
// options are read from the spec of whichever policy holds them, so an error names the policy the
// user wrote.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "policies/detail/policy_options.h"
#include "policies/policy.h"

namespace memreplay {

struct RmmPoolConfig {
  uint64_t initial_pool_size = 0;  // allocated at construction
  std::optional<uint64_t> maximum_pool_size;  // none: the pool grows until the device refuses
};

// The pool's options (initial_pool_size, maximum_pool_size) among `options`' entries; entries of
// other keys are the caller's. PolicySpecError naming `options`' policy for a bad value, or for an
// initial_pool_size larger than maximum_pool_size.
RmmPoolConfig rmm_pool_config(const detail::PolicyOptions& options);

// The pool on `device`. PolicySpecError when initial_pool_size does not fit on the device.
std::unique_ptr<Policy> make_rmm_pool(Device& device, const RmmPoolConfig& config);

}  // namespace memreplay
