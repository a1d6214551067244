#include "replayer/latency_histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace memreplay {
namespace {

TEST(LatencyHistogram, EmptyReportsZeros) {
  const LatencyHistogram h;
  const LatencySummary s = h.summary();
  EXPECT_EQ(s.count, 0u);
  EXPECT_EQ(s.p50_ns, 0u);
  EXPECT_EQ(s.p99_ns, 0u);
  EXPECT_EQ(s.max_ns, 0u);
  EXPECT_EQ(s.mean_ns, 0.0);
}

TEST(LatencyHistogram, SmallValuesAreExact) {
  // GIVEN the samples 1..100
  LatencyHistogram h;
  for (uint64_t v = 1; v <= 100; ++v) h.record(v);
  // THEN nearest-rank percentiles are the exact samples
  EXPECT_EQ(h.percentile(50), 50u);
  EXPECT_EQ(h.percentile(90), 90u);
  EXPECT_EQ(h.percentile(99), 99u);
  EXPECT_EQ(h.percentile(100), 100u);
  EXPECT_EQ(h.percentile(0), 1u);
  EXPECT_EQ(h.count(), 100u);
  EXPECT_DOUBLE_EQ(h.summary().mean_ns, 50.5);
}

TEST(LatencyHistogram, BucketsTileTheWholeRange) {
  // Consecutive buckets touch, and every value maps into the bucket that holds it.
  for (unsigned b = 0; b < LatencyHistogram::bucket_of(UINT64_MAX); ++b)
    ASSERT_EQ(LatencyHistogram::bucket_end(b), LatencyHistogram::bucket_start(b + 1)) << "bucket " << b;
  const std::vector<uint64_t> values = {
      0, 255, 256, 257, 511, 512, 1000, 123456789, uint64_t{1} << 40, (uint64_t{1} << 63) + 12345, UINT64_MAX};
  for (const uint64_t v : values) {
    const unsigned b = LatencyHistogram::bucket_of(v);
    EXPECT_LE(LatencyHistogram::bucket_start(b), v) << v;
    if (v != UINT64_MAX) EXPECT_LT(v, LatencyHistogram::bucket_end(b)) << v;
  }
  EXPECT_EQ(LatencyHistogram::bucket_of(UINT64_MAX), 7423u);
}

TEST(LatencyHistogram, RelativeErrorBelowOnePercent) {
  // GIVEN log-uniform samples from 100 ns to 10 ms, with a fixed seed
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> exponent(2.0, 7.0);
  std::vector<uint64_t> samples;
  LatencyHistogram h;
  for (int i = 0; i < 100000; ++i) {
    const auto v = static_cast<uint64_t>(std::pow(10.0, exponent(rng)));
    samples.push_back(v);
    h.record(v);
  }
  std::sort(samples.begin(), samples.end());
  // THEN each percentile is within 1% of the exact nearest-rank sample
  for (const double p : {1.0, 10.0, 50.0, 90.0, 99.0, 99.9}) {
    const auto rank = static_cast<size_t>(std::ceil(p / 100.0 * double(samples.size())));
    const double exact = double(samples[rank - 1]);
    EXPECT_NEAR(double(h.percentile(p)), exact, exact * 0.01) << "p" << p;
  }
  EXPECT_EQ(h.max(), samples.back());
}

TEST(LatencyHistogram, OutlierDoesNotMoveTheMedian) {
  // GIVEN 99 fast samples and one slow device call
  LatencyHistogram h;
  for (int i = 0; i < 99; ++i) h.record(120);
  h.record(2'000'000);
  const LatencySummary s = h.summary();
  EXPECT_EQ(s.p50_ns, 120u);
  EXPECT_EQ(s.p90_ns, 120u);
  EXPECT_EQ(s.p99_ns, 120u);
  EXPECT_EQ(s.max_ns, 2'000'000u);
  EXPECT_EQ(h.percentile(99.5), 2'000'000u);  // within the bucket, capped at the max seen
}

TEST(LatencyHistogram, MergeAndClear) {
  LatencyHistogram a;
  LatencyHistogram b;
  for (int i = 0; i < 10; ++i) a.record(100);
  for (int i = 0; i < 30; ++i) b.record(1000);
  a.merge(b);
  EXPECT_EQ(a.count(), 40u);
  EXPECT_EQ(a.percentile(25), 100u);
  EXPECT_NEAR(double(a.percentile(50)), 1000.0, 10.0);
  EXPECT_EQ(a.max(), 1000u);
  a.clear();
  EXPECT_EQ(a.count(), 0u);
  EXPECT_EQ(a.percentile(50), 0u);
}

}  // namespace
}  // namespace memreplay
