// LatencyHistogram: percentiles of nanosecond samples in fixed memory (HdrHistogram's idea).
//
// Buckets are log-linear: values below 2^kPrecisionBits are counted exactly; above, each power of
// two [2^e, 2^(e+1)) is cut into 2^(kPrecisionBits-1) equal buckets. A value is reported as the
// middle of its bucket, so the relative error is at most 2^-kPrecisionBits (0.4%):
//
//   value:  0 1 2 ... 255 | 256 258 ... 510 | 512 516 ... 1020 | 1024 ...
//   bucket: 0 1 2 ... 255 | 256 257 ... 383 | 384 385 ...  511 | 512  ...
//           exact         | width 2         | width 4          | width 8
//
// record() is a bit scan and an increment (the engine calls it around every allocate/free);
// the whole uint64_t range fits in 7,424 buckets (58 KiB).
#pragma once

#include <cstdint>
#include <vector>

namespace memreplay {

struct LatencySummary {
  uint64_t count = 0;
  uint64_t p50_ns = 0;
  uint64_t p90_ns = 0;
  uint64_t p99_ns = 0;
  uint64_t max_ns = 0;
  double mean_ns = 0;  // exact: from the sum of the samples
};

class LatencyHistogram {
 public:
  static constexpr unsigned kPrecisionBits = 8;

  LatencyHistogram();

  void record(uint64_t ns) {
    ++buckets_[bucket_of(ns)];
    ++count_;
    sum_ += ns;
    if (ns > max_) max_ = ns;
  }
  // Adds another histogram's samples (e.g. per-stream ones into a total).
  void merge(const LatencyHistogram& other);
  void clear();

  uint64_t count() const { return count_; }
  uint64_t max() const { return max_; }
  // The value at or below which `percent` % of the samples lie (nearest rank), within the
  // relative error above; the exact maximum for 100, 0 when empty.
  uint64_t percentile(double percent) const;
  LatencySummary summary() const;

  static unsigned bucket_of(uint64_t value);
  // The smallest value of a bucket, and the one past its largest.
  static uint64_t bucket_start(unsigned bucket);
  static uint64_t bucket_end(unsigned bucket);

 private:
  std::vector<uint64_t> buckets_;
  uint64_t count_ = 0;
  uint64_t sum_ = 0;
  uint64_t max_ = 0;
};

}  // namespace memreplay
