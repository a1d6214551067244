#include "policies/memreplay/period_detector.h"

#include <algorithm>

namespace memreplay::detail {
namespace {

constexpr uint64_t kBase = 0x100000001b3ULL;  // odd: multiplying by it mod 2^64 loses nothing

uint64_t mix(uint64_t x) {  // splitmix64's finaliser: nearby sizes hash far apart
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

constexpr uint64_t power(uint64_t base, uint64_t exponent) {
  uint64_t result = 1;
  for (uint64_t i = 0; i < exponent; ++i) result *= base;
  return result;
}

constexpr uint64_t kBaseToTheWindow = power(kBase, 16);

}  // namespace

uint64_t PeriodDetector::on_allocate(uint64_t key, uint64_t bytes, uint64_t device_calls_so_far) {
  const uint64_t seq = count_;
  const Entry entry{key, bytes, kNotFreed, device_calls_so_far, 0, 0};
  if (history_.size() < kHistory) {
    if (history_.empty()) history_.reserve(kHistory);
    history_.push_back(entry);
  } else
    at(seq) = entry;
  ++count_;
  search_credit_ = std::min(search_credit_ + kSearchCredit, kMaxSearchCredit);

  // The hash of the last kWindow keys, rolled forward by one.
  window_hash_ = window_hash_ * kBase + mix(key);
  if (count_ > kWindow) window_hash_ -= mix(at(seq - kWindow).key) * kBaseToTheWindow;

  if (period_ != 0) {
    if (seq >= period_ && at(seq - period_).key == key) {
      ++matched_;
    } else {
      period_ = matched_ = 0;
    }
  }
  if (count_ >= kWindow && mix(window_hash_) % kAnchorEvery == 0) {
    if (period_ == 0) find_period(window_hash_);
    if (anchors_.size() >= kMaxAnchors) anchors_.clear();  // bounded: start over
    uint64_t& latest = anchors_[window_hash_];
    at(seq).previous_anchor = latest;
    latest = count_;
  }
  return seq;
}

void PeriodDetector::on_free(uint64_t seq) {
  if (!held(seq)) return;
  at(seq).freed_at = count_;
}

uint64_t PeriodDetector::matching_run(uint64_t period, uint64_t limit) const {
  uint64_t run = 0;
  // One period's worth is all that adopting a period needs; later allocations extend it.
  for (uint64_t seq = count_; seq > period && run < period && run < limit; --seq, ++run) {
    if (!held(seq - 1 - period) || at(seq - 1).key != at(seq - 1 - period).key) break;
  }
  return run;
}

void PeriodDetector::find_period(uint64_t hash) {
  const auto found = anchors_.find(hash);
  if (found == anchors_.end()) return;
  // The most recent earlier position first: the shortest period.
  uint64_t position = found->second;
  for (size_t tried = 0; tried < kPositionsPerAnchor && position != 0; ++tried) {
    const uint64_t period = count_ - position;
    if (period > kMaxPeriod) break;
    if (period != 0) {
      const uint64_t run = matching_run(period, search_credit_);
      search_credit_ -= std::min(search_credit_, run + 1);
      if (run >= period) {
        adopt(period, run);
        return;
      }
      if (search_credit_ == 0) return;  // undecided: the next anchor tries again
    }
    if (!held(position - 1)) break;
    position = at(position - 1).previous_anchor;
  }
}

void PeriodDetector::adopt(uint64_t period, uint64_t matched) {
  period_ = period;
  matched_ = matched;
}

uint64_t PeriodDetector::calls_in_period(uint64_t periods_back, uint64_t device_calls_now) const {
  if (period_ == 0 || count_ < (periods_back + 1) * period_) return 0;
  const uint64_t first = count_ - (periods_back + 1) * period_;
  if (!held(first)) return 0;
  const uint64_t calls_after = periods_back == 0 ? device_calls_now : at(first + period_).calls_before;
  return calls_after - at(first).calls_before;
}

std::vector<PeriodDetector::Allocation> PeriodDetector::last_period() const {
  std::vector<Allocation> allocations;
  if (period_ == 0) return allocations;
  const uint64_t first = count_ - period_;
  allocations.reserve(period_);
  for (uint64_t seq = first; seq < count_; ++seq) allocations.push_back({at(seq).key, at(seq).bytes, lifetime_of(seq)});
  return allocations;
}

uint64_t PeriodDetector::lifetime_of(uint64_t seq) const {
  if (period_ == 0) return kNotFreed;
  for (uint64_t back = 0, earlier = seq; back < kLifetimePeriods && held(earlier); ++back, earlier -= period_) {
    if (at(earlier).key != at(seq).key) break;
    if (at(earlier).freed_at != kNotFreed) return at(earlier).freed_at - earlier;
    if (earlier < period_) break;
  }
  return kNotFreed;
}

}  // namespace memreplay::detail
