#include "replayer/timeline.h"

#include <algorithm>

namespace memreplay {

Timeline::Timeline(size_t capacity) : capacity_(std::max<size_t>(capacity, 2)) { points_.reserve(capacity_); }

void Timeline::start_bucket(uint64_t event, uint64_t time_ns, uint64_t reserved, uint64_t allocated,
                            uint64_t requested) {
  if (points_.size() == capacity_) halve();
  const uint64_t bucket_start = event / bucket_width_ * bucket_width_;
  if (!points_.empty() && points_.back().event == bucket_start) {  // halving merged into this bucket
    next_bucket_start_ = bucket_start + bucket_width_;
    record(event, time_ns, reserved, allocated, requested);
    return;
  }
  points_.push_back({bucket_start, time_ns, reserved, allocated, requested});
  next_bucket_start_ = bucket_start + bucket_width_;
}

void Timeline::halve() {
  bucket_width_ *= 2;
  std::vector<TimelinePoint> merged;
  merged.reserve(capacity_);
  for (const auto& p : points_) {
    const uint64_t start = p.event / bucket_width_ * bucket_width_;
    if (!merged.empty() && merged.back().event == start) {
      auto& m = merged.back();
      m.reserved = std::max(m.reserved, p.reserved);
      m.allocated = std::max(m.allocated, p.allocated);
      m.requested = std::max(m.requested, p.requested);
    } else {
      merged.push_back(p);
      merged.back().event = start;
    }
  }
  points_ = std::move(merged);
  next_bucket_start_ = points_.back().event + bucket_width_;
}

}  // namespace memreplay
