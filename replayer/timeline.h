// A bounded timeline of reserved/allocated/requested bytes. Holds at most `capacity` buckets; when
// full, neighbouring buckets merge (keeping each one's maxima) and the bucket width doubles, so a
// 100M-event replay keeps the same small memory as a short one and no peak is lost.
#pragma once

#include <cstdint>
#include <vector>

#include "replayer/metrics.h"

namespace memreplay {

class Timeline {
 public:
  explicit Timeline(size_t capacity = 1024);
  // Called for every replayed event, so the common case (same bucket) stays inline and cheap.
  void record(uint64_t event, uint64_t time_ns, uint64_t reserved, uint64_t allocated, uint64_t requested) {
    if (event < next_bucket_start_) {
      auto& p = points_.back();
      if (reserved > p.reserved) p.reserved = reserved;
      if (allocated > p.allocated) p.allocated = allocated;
      if (requested > p.requested) p.requested = requested;
      return;
    }
    start_bucket(event, time_ns, reserved, allocated, requested);
  }
  std::vector<TimelinePoint> points() const { return points_; }

 private:
  void start_bucket(uint64_t event, uint64_t time_ns, uint64_t reserved, uint64_t allocated, uint64_t requested);
  void halve();

  size_t capacity_;
  uint64_t bucket_width_ = 1;  // events per bucket
  uint64_t next_bucket_start_ = 0;  // first event past the last bucket
  std::vector<TimelinePoint> points_;
};

}  // namespace memreplay
