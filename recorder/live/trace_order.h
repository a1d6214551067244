// The writer thread's view of the sequence numbers: record() numbers every event with one
// process-wide atomic increment, and each thread's ring holds its events in that order, so the
// trace order is a merge of the rings' runs. A number taken whose event is not yet published
// leaves a gap; events after it wait until it closes, or until it has stayed open so long that its
// thread must have died mid-record (then the writer moves past it and a late event goes out when it
// comes: sequence order is kept wherever it can be).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "recorder/live/thread_ring.h"

namespace memreplay::detail {

class TraceOrder {
 public:
  using Clock = std::chrono::steady_clock;
  // A gap normally closes within microseconds; one open this long belongs to a thread that will
  // never publish it (killed mid-record).
  static constexpr auto kGapTimeout = std::chrono::milliseconds(200);

  // max_staged: past this many records waiting behind a gap, the writer stops waiting for it.
  explicit TraceOrder(size_t max_staged) : max_staged_(max_staged) {}

  // staged[run_starts[i]..run_starts[i+1]) is one ring's drain, in order; everything before the
  // first run is in order already. Afterwards all of `staged` is in sequence order. One thread
  // recording (the usual case) costs nothing.
  static void merge_runs(std::vector<LiveRecord>& staged, std::span<const size_t> run_starts);

  // How many of the (merged) staged records can be written now: those continuing the sequence
  // without a gap; all of them when `force` (closing, a fatal signal) or when the gap timed out.
  size_t ready_prefix(const std::vector<LiveRecord>& staged, bool force);

  // The record with this sequence number went to the file.
  void written(uint64_t seq) noexcept { next_seq_ = std::max(next_seq_, seq + 1); }
  // Every sequence number below this is in the file (or was skipped).
  uint64_t next_seq() const noexcept { return next_seq_; }

 private:
  const size_t max_staged_;
  uint64_t next_seq_ = 0;
  uint64_t gap_seq_ = UINT64_MAX;  // the gap being waited for
  Clock::time_point gap_since_{};
};

}  // namespace memreplay::detail
