// PeriodDetector: learns, while the run goes, that it repeats itself: the same sequence of
// allocations (size and stream) period after period, as a training loop's steps or an inference
// loop's cycle of batches do. The memreplay policy uses it to plan a step's placement once a step
// has been seen (step_plan.h). It knows only what a live allocator sees: allocations in order, and
// which of them are freed when.
//
// How: a rolling hash of the last kWindow allocation keys marks anchors (about one position in
// kAnchorEvery, chosen by the hash, so that a repeat of the sequence repeats its anchors); where
// an anchor's hash was seen before, each earlier position is a candidate period, and the shortest
// whose last period equals the one before it is taken. It holds while each new allocation equals
// the one a period earlier. Memory is bounded: the last kHistory allocations and at most
// kMaxAnchors anchors (the table starts over when full).
#pragma once

#include <cstdint>
#include <vector>

#include <absl/container/flat_hash_map.h>

namespace memreplay::detail {

class PeriodDetector {
 public:
  // Longer periods are not looked for: a plan holds at most StepPlan::kMaxSlots (4096) slots.
  static constexpr uint64_t kMaxPeriod = uint64_t{1} << 12;
  // The allocations remembered: four of the longest periods (lifetimes and device calls are read
  // up to four periods back), a power of two (a ring indexed by a mask).
  static constexpr uint64_t kHistory = 4 * kMaxPeriod;
  static constexpr uint64_t kNotFreed = UINT64_MAX;

  // At each allocation, before it is placed: its key (size and stream). Returns its sequence
  // number (0, 1, ...).
  uint64_t on_allocate(uint64_t key, uint64_t bytes, uint64_t device_calls_so_far);
  // placed() records where allocation `seq` went; address_of() reads it back (0: unknown, or no
  // longer held).
  void placed(uint64_t seq, uint64_t address) {
    if (held(seq)) at(seq).address = address;
  }
  uint64_t address_of(uint64_t seq) const { return held(seq) ? at(seq).address : 0; }
  // When the allocation with sequence number `seq` is freed.
  void on_free(uint64_t seq);

  // The period (in allocations) the run repeats with, 0 when none holds.
  uint64_t period() const { return period_; }
  // How many allocations in a row, up to the last, equal the one a period before.
  uint64_t matched() const { return matched_; }
  uint64_t allocations() const { return count_; }
  // Device calls the policy made during the period that ended `periods_back` periods ago (0: the
  // last one), as it reported them at each allocation; 0 where that is no longer held.
  uint64_t calls_in_period(uint64_t periods_back, uint64_t device_calls_now) const;

  // The last period, [allocations() - period(), allocations()), for planning the next: each
  // allocation's key, size and lifetime, the lifetime from the latest period in which the
  // allocation at that place has been freed (a block may outlive its period: gradients freed
  // when the next step makes them again).
  struct Allocation {
    uint64_t key;
    uint64_t bytes;
    uint64_t lifetime;  // allocations made from it to its free: freed before allocation seq + lifetime
  };
  std::vector<Allocation> last_period() const;
  // The lifetime last_period() gives allocation `seq` (one of the last period's), kNotFreed while
  // no instance of its place that it looks back to has been freed.
  uint64_t lifetime_of(uint64_t seq) const;
  // How many periods back last_period() looks for a freed instance.
  static constexpr uint64_t kLifetimePeriods = 4;

 private:
  static constexpr uint64_t kWindow = 16;
  static constexpr uint64_t kAnchorEvery = 8;
  static constexpr size_t kPositionsPerAnchor = 16;
  static constexpr size_t kMaxAnchors = 1 << 13;
  // Searching for a period compares allocations: at most kSearchCredit per allocation, on
  // average, so that a run that almost repeats costs no more than one that does.
  static constexpr uint64_t kSearchCredit = 64;
  static constexpr uint64_t kMaxSearchCredit = 2 * kMaxPeriod;

  struct Entry {
    uint64_t key;
    uint64_t bytes;
    uint64_t freed_at;  // allocations made when it was freed, kNotFreed while live
    uint64_t calls_before;  // device calls the policy had made before it
    // At an anchor (the window ending here): the previous position of the same hash, 0 if none.
    uint64_t previous_anchor;
    uint64_t address;
  };
  const Entry& at(uint64_t seq) const { return history_[seq % kHistory]; }
  Entry& at(uint64_t seq) { return history_[seq % kHistory]; }
  bool held(uint64_t seq) const { return seq < count_ && count_ - seq <= history_.size(); }
  // Allocations in a row, ending at the last, equal to the one `period` before: at most
  // `period`, and at most `limit` compared.
  uint64_t matching_run(uint64_t period, uint64_t limit) const;
  void find_period(uint64_t hash);
  void adopt(uint64_t period, uint64_t matched);

  std::vector<Entry> history_;  // grows to kHistory, then a ring
  uint64_t count_ = 0;
  uint64_t window_hash_ = 0;
  // hash -> the latest position (allocations made) where the window had it; the earlier ones
  // are chained through the history (Entry::previous_anchor), at most kPositionsPerAnchor.
  absl::flat_hash_map<uint64_t, uint64_t> anchors_;
  uint64_t period_ = 0;
  uint64_t matched_ = 0;
  uint64_t search_credit_ = 0;
};

}  // namespace memreplay::detail
