// Finds the torch.cuda.empty_cache() calls in a PyTorch trace, which records none: the call only
// shows as the segment_free / segment_unmap entries it causes.
//
// Rule 0, where the snapshot recorded stacks (frames on its entries, _record_memory_history with
// context): PyTorch records each segment_free with the context of the call that released it.
// torch.cuda.empty_cache() gathers its own (a frame `empty_cache` of torch/cuda/memory.py); a
// release-and-retry (or GC) inside malloc uses that malloc's context, which its segment_alloc and
// alloc entries carry too. So a run whose first release names empty_cache is one, and a run whose
// every release carries the stack of the next alloc is not; any other run goes to rules 1-3.
//
// Rule: a maximal run of consecutive segment_free/segment_unmap entries is an empty_cache when
//   1. it releases EVERY cudaMalloc segment of the default pool that is entirely free just before
//      it (occupancy is tracked from the initial state through every alloc / free_completed; a
//      private pool keeps its free segments while its graphs or MemPool live, e.g. across the
//      empty_cache that torch.cuda.graph() runs before each capture), and
//   2. no `oom` entry follows it before the next `alloc`;
//   3. it is not a release-and-retry: the allocator of a run capped by
//      set_per_process_memory_fraction frees its cached segments when a device allocation would
//      pass the cap, then retries. Such a run is followed at once by that segment_alloc (or map),
//      and the bytes reserved before the run plus that segment exceed the most the trace ever
//      reserved (a cap is at least that much), which an empty_cache's next allocation does not do
//      unless the empty_cache came at the very peak. The two look the same there; what tells them
//      apart in practice is what came just before: empty_cache() is called between steps, after
//      tensors were dropped (the run follows a free_requested / free_completed), while a retry
//      happens inside an allocation in the middle of the work. So a run right after a free is an
//      empty_cache. So is a run followed at once by the first segment of a private pool: that is
//      a capture beginning, and torch.cuda.graph() empties the cache right before it begins (a
//      capture is often taken just after warm-up, at the reserved peak, after no free).
// The free_completed entries that empty_cache's stream synchronisation produces come before the
// run and are ordinary trace events; the inferred empty_cache goes right before the first
// release, so a replay sees those blocks completed, as the real call did.
//
// Rule 3 is a guess; the run's cap settles it. A run that rules 0-2 leave open and that a device
// allocation follows (segment_alloc or map: a retry is always followed by the one it made room
// for) is returned open, with the first alloc after it: a sink that knows the cap the run had
// (TraceSink::burst_is_retry, replayer/retry_reading_sink.h) replays the trace up to the run and
// asks the allocator model whether that alloc fits without releasing cached memory. If it does not,
// the allocator itself would have released and retried there: a retry. If it does, nothing in
// the allocator releases there: an empty_cache. Only where no sink answers does rule 3 decide.
//
// What this does not tell apart without stacks (rule 0 settles the first two where they exist):
// - Garbage collection and release_available_cached_blocks release only some free segments, so
//   rule 1 rejects them — unless the segments they release happen to be all the free ones.
// - Without the cap, rule 3 takes an empty_cache made at the reserved peak, not right after a
//   free, and followed at once by a device allocation, for a retry; and a retry right after a free
//   for an empty_cache (the replay then calls empty_cache where the allocator retried: the same
//   segments go, one num_alloc_retries less). With the cap, an empty_cache() called right before an
//   allocation that would not have fit without it is read as a retry (the same segments go, one
//   num_alloc_retries more). A retry forced by a cudaMalloc that failed below the cap (another
//   process took the memory) looks like an empty_cache.
// - An empty_cache with nothing to release leaves no trace at all and cannot be inferred.
// - Expandable segments: unmaps only need rule 2 (recent PyTorch's GC and
//   release_available_cached_blocks skip expandable segments, so only empty_cache and the OOM
//   path unmap); rule 1 still applies to the cudaMalloc segments of the same run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "proto/event.h"
#include "proto/frame_text.h"
#include "recorder/import/pytorch/allocator_state.h"

namespace memreplay {

// The stacks a snapshot recorded, for rule 0: the stack id of entry i (0: none), and whether a
// stack holds torch.cuda.empty_cache's frame.
struct EntryStacks {
  std::function<uint32_t(size_t)> of_entry;
  std::function<bool(uint32_t)> calls_empty_cache;
};

// Whether a snapshot's frames list comes from torch.cuda.empty_cache().
bool is_empty_cache_stack(std::span<const FrameText> frames);

// A run of releases read as an empty_cache() call, or left open between one and a retry.
struct ReleaseRun {
  static constexpr size_t kSettled = SIZE_MAX;
  size_t first = 0;  // index of its first release entry
  bool empty_cache = true;  // the reading of rules 0-3
  // An open run (see above): the first alloc after it, the allocation a retry would be inside;
  // kSettled where rules 0-2 read it.
  size_t next_alloc = kSettled;
  bool open() const { return next_alloc != kSettled; }
  friend bool operator==(const ReleaseRun&, const ReleaseRun&) = default;
};

// The runs of `trace` (one device, in order, starting from `initial`) read as an empty_cache or
// left open, by first entry, ascending. `stacks`: null where none were recorded. `done`: see
// TraceWindowDone. `pools`: each entry's pool (pool_assignment.h), empty where every entry is in
// the default pool.
std::vector<ReleaseRun> infer_empty_cache(const AllocatorState& initial, std::span<const TraceStep> trace,
                                          const EntryStacks* stacks = nullptr, const TraceWindowDone& done = {},
                                          std::span<const uint16_t> pools = {});

}  // namespace memreplay
