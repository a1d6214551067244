// Finds the torch.cuda.empty_cache() calls in a PyTorch trace, which records none: the call only
// shows as the segment_free / segment_unmap entries it causes.
//
// Rule: a maximal run of consecutive segment_free/segment_unmap entries is an empty_cache when
//   1. it releases EVERY cudaMalloc segment that is entirely free just before it (occupancy is
//      tracked from the initial state through every alloc / free_completed), and
//   2. no `oom` entry follows it before the next `alloc`.
// The free_completed entries that empty_cache's stream synchronisation produces come before the
// run and are ordinary trace events; the inferred empty_cache goes right before the first
// release, so a replay sees those blocks completed, as the real call did.
//
// What this does not tell apart:
// - Garbage collection and release_available_cached_blocks release only some free segments, so
//   rule 1 rejects them — unless the segments they release happen to be all the free ones.
// - The OOM path's release_cached_blocks is empty_cache itself; when its retry then succeeds no
//   `oom` is recorded and it is inferred as an empty_cache. A replay behaves the same either way.
// - An empty_cache with nothing to release leaves no trace at all and cannot be inferred.
// - Expandable segments: unmaps only need rule 2 (recent PyTorch's GC and
//   release_available_cached_blocks skip expandable segments, so only empty_cache and the OOM
//   path unmap); rule 1 still applies to the cudaMalloc segments of the same run.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "proto/event.h"
#include "recorder/import/allocator_state.h"

namespace memreplay {

// Indices into `trace` (one device, in order, starting from `initial`) of the first release entry
// of each run inferred to be an empty_cache, ascending.
std::vector<size_t> infer_empty_cache(const AllocatorState& initial, std::span<const TraceStep> trace);

}  // namespace memreplay
