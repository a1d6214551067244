#include "recorder/live/trace_order.h"

#include <algorithm>

namespace memreplay::detail {

void TraceOrder::merge_runs(std::vector<LiveRecord>& staged, std::span<const size_t> run_starts) {
  const auto by_seq = [](const LiveRecord& a, const LiveRecord& b) { return a.seq < b.seq; };
  for (size_t i = 0; i < run_starts.size(); ++i) {
    const size_t start = run_starts[i];
    const size_t end = i + 1 < run_starts.size() ? run_starts[i + 1] : staged.size();
    if (start > 0 && staged[start - 1].seq > staged[start].seq)
      std::inplace_merge(staged.begin(), staged.begin() + static_cast<ptrdiff_t>(start),
                         staged.begin() + static_cast<ptrdiff_t>(end), by_seq);
  }
}

size_t TraceOrder::ready_prefix(const std::vector<LiveRecord>& staged, bool force) {
  if (force) return staged.size();
  size_t n = 0;
  uint64_t expect = next_seq_;
  while (n < staged.size() && staged[n].seq <= expect) {  // below: late, after a skipped gap
    expect = std::max(expect, staged[n].seq + 1);
    ++n;
  }
  if (n == staged.size()) {
    gap_seq_ = UINT64_MAX;
    return n;
  }
  // A gap at `expect`: wait for it, but not forever, and not with unbounded memory.
  const auto now = Clock::now();
  if (gap_seq_ != expect) {
    gap_seq_ = expect;
    gap_since_ = now;
  }
  if (now - gap_since_ > kGapTimeout || staged.size() > max_staged_) return staged.size();
  return n;
}

}  // namespace memreplay::detail
