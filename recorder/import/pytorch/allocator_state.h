// The allocator state at one moment (live segments and blocks of one device), and how to get the
// state at the START of a trace from the state at its END. Importers need this when the trace
// does not begin with an empty allocator: PyTorch's ring buffer dropped the oldest entries
// (max_entries), or recording began after the first allocations.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "proto/event.h"

namespace memreplay {

// A trace event reduced to what the rebuild (and empty_cache inference) reads: 24 bytes, since
// importers keep one per entry of traces with millions. `stream` is the caller's label for the
// stream (an index into its own table of handles); states hand the same labels back.
struct TraceStep {
  uint64_t address = 0;
  uint64_t size = 0;
  uint32_t stream = 0;
  EventKind kind = EventKind::alloc;
};

struct SegmentState {
  uint64_t address = 0;
  uint64_t size = 0;
  uint64_t stream = 0;  // a handle, or the caller's label for one (see TraceStep)
  // A mapped range of an expandable segment (segment_map/unmap), not a cudaMalloc segment.
  bool expandable = false;
  uint16_t pool = kDefaultPool;  // the pool it belongs to (pool_assignment.h)
  friend bool operator==(const SegmentState&, const SegmentState&) = default;
};

struct BlockState {
  uint64_t address = 0;
  uint64_t requested = 0;  // bytes the application asked for
  uint64_t size = 0;  // bytes the allocator gave it (rounded); 0 = unknown
  uint64_t stream = 0;  // a handle, or the caller's label for one (see TraceStep)
  bool pending_free = false;  // free_requested seen, free_completed not yet
  friend bool operator==(const BlockState&, const BlockState&) = default;
};

// Live segments and blocks (allocated or pending free) of one device, each sorted by address.
struct AllocatorState {
  std::vector<SegmentState> segments;
  std::vector<BlockState> blocks;
  bool empty() const { return segments.empty() && blocks.empty(); }
};

// Passes over a trace of millions of entries, held in scratch files (step_spool.h), tell the
// holder which entries they are done with, [begin, end), every kTraceWindowEntries entries or so,
// so that the pages holding them can go back and resident memory stays a window of the trace.
// The entries stay readable (they read back from the file), so a late look costs time only.
using TraceWindowDone = std::function<void(size_t begin, size_t end)>;
inline constexpr size_t kTraceWindowEntries = size_t{1} << 16;

// Calls `done` for what a pass over `entries` entries has left behind, one window late: a
// forward pass at entry i may still look at entry i - 1, a backward pass at i + 1.
class TraceWindows {
 public:
  TraceWindows(const TraceWindowDone& done, size_t entries) : done_(done), kept_end_(entries) {}
  // A forward pass has read every entry below `i`.
  void forward(size_t i) {
    if (done_ && i >= kept_begin_ + 2 * kTraceWindowEntries) {
      done_(kept_begin_, i - kTraceWindowEntries);
      kept_begin_ = i - kTraceWindowEntries;
    }
  }
  // A backward pass has read every entry from `i` up.
  void backward(size_t i) {
    if (done_ && i + 2 * kTraceWindowEntries <= kept_end_) {
      done_(i + kTraceWindowEntries, kept_end_);
      kept_end_ = i + kTraceWindowEntries;
    }
  }

 private:
  const TraceWindowDone& done_;
  size_t kept_begin_ = 0, kept_end_;
};

// The state before trace[0], found by undoing `trace` (one device, in order) from `final_state`,
// the state after its last event — as PyTorch's MemoryViz does: an alloc did not exist before
// it, a free_completed block was live (pending) before it, a free_requested block was allocated,
// a segment_alloc/map range did not exist, a segment_free/unmap range did. Inconsistent input
// (e.g. an alloc of a block that is not live afterwards) is tolerated as MemoryViz does.
//
// Block sizes in the allocator are known for blocks still live in `final_state`. A block freed
// during the trace but allocated before it has no recorded size: it gets `requested` rounded up
// to 512 bytes (PyTorch's minimum block granularity). That is exact for small requests and an
// approximation for large ones (the allocator may have given it a bigger, unsplit block).
// `done`: see TraceWindowDone.
AllocatorState rebuild_initial_state(const AllocatorState& final_state, std::span<const TraceStep> trace,
                                     const TraceWindowDone& done = {});

// Events that recreate `state` from an empty allocator, all flagged kPreexisting: segment_alloc
// for cudaMalloc segments, segment_map for mapped expandable ranges, then alloc for each live
// block (size = requested bytes, aux = block size) followed by free_requested for a block that is
// pending free. Every event gets `device` and `time_ns`, and the pool of its segment.
std::vector<Event> preexisting_events(const AllocatorState& state, uint32_t device, uint64_t time_ns);

}  // namespace memreplay
