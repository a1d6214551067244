#include "replayer/latency_histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace memreplay {
namespace {

constexpr uint64_t kExact = uint64_t{1} << LatencyHistogram::kPrecisionBits;  // 256 exact values
constexpr uint64_t kHalf = kExact / 2;  // buckets per octave
constexpr unsigned kBucketCount = (64 - LatencyHistogram::kPrecisionBits) * kHalf + kExact;

}  // namespace

LatencyHistogram::LatencyHistogram() : buckets_(kBucketCount, 0) {}

unsigned LatencyHistogram::bucket_of(uint64_t value) {
  if (value < kExact) return static_cast<unsigned>(value);
  // value = mantissa << shift with mantissa in [kHalf, kExact): kHalf buckets per power of two.
  const unsigned shift = static_cast<unsigned>(std::bit_width(value)) - kPrecisionBits;
  return static_cast<unsigned>(shift * kHalf + (value >> shift));
}

uint64_t LatencyHistogram::bucket_start(unsigned bucket) {
  if (bucket < kExact) return bucket;
  const unsigned shift = static_cast<unsigned>(bucket / kHalf - 1);
  const uint64_t mantissa = bucket % kHalf + kHalf;
  return mantissa << shift;
}

uint64_t LatencyHistogram::bucket_end(unsigned bucket) {
  if (bucket < kExact) return uint64_t{bucket} + 1;
  const unsigned shift = static_cast<unsigned>(bucket / kHalf - 1);
  const uint64_t start = bucket_start(bucket);
  const uint64_t width = uint64_t{1} << shift;
  return start > UINT64_MAX - width ? UINT64_MAX : start + width;  // the last bucket saturates
}

void LatencyHistogram::merge(const LatencyHistogram& other) {
  for (size_t i = 0; i < buckets_.size(); ++i) buckets_[i] += other.buckets_[i];
  count_ += other.count_;
  sum_ += other.sum_;
  max_ = std::max(max_, other.max_);
}

void LatencyHistogram::clear() {
  std::fill(buckets_.begin(), buckets_.end(), 0);
  count_ = sum_ = max_ = 0;
}

uint64_t LatencyHistogram::percentile(double percent) const {
  if (count_ == 0) return 0;
  if (percent >= 100) return max_;
  // Nearest rank: the smallest sample with at least `percent` % of the samples at or below it.
  const double wanted = std::ceil(std::max(percent, 0.0) / 100.0 * static_cast<double>(count_));
  const uint64_t rank = std::max<uint64_t>(1, static_cast<uint64_t>(wanted));
  uint64_t seen = 0;
  for (unsigned b = 0; b < buckets_.size(); ++b) {
    seen += buckets_[b];
    if (seen >= rank) {
      const uint64_t start = bucket_start(b);
      const uint64_t middle = start + (bucket_end(b) - 1 - start) / 2;
      return std::min(middle, max_);  // never above a value that was seen
    }
  }
  return max_;
}

LatencySummary LatencyHistogram::summary() const {
  LatencySummary s;
  s.count = count_;
  s.p50_ns = percentile(50);
  s.p90_ns = percentile(90);
  s.p99_ns = percentile(99);
  s.max_ns = max_;
  s.mean_ns = count_ == 0 ? 0.0 : static_cast<double>(sum_) / static_cast<double>(count_);
  return s;
}

}  // namespace memreplay
