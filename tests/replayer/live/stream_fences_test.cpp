#include "replayer/live/stream_fences.h"

#include <gtest/gtest.h>

namespace memreplay {
namespace {

using Streams = std::vector<StreamId>;

TEST(StreamFences, AnotherStreamWaitsForTheFreeingStream) {
  StreamFences fences;
  fences.add(1, 0x1000, 0x1000);
  EXPECT_EQ(fences.claim(0x1800, 0x100, 2), Streams{1});
  // The claimed piece is no longer fenced; the rest still is.
  EXPECT_EQ(fences.claim(0x1800, 0x100, 3), Streams{});
  EXPECT_EQ(fences.claim(0x1000, 0x100, 3), Streams{1});
}

TEST(StreamFences, TheSameStreamNeedsNoWait) {
  StreamFences fences;
  fences.add(1, 0x1000, 0x1000);
  EXPECT_EQ(fences.claim(0x1000, 0x1000, 1), Streams{});
  EXPECT_EQ(fences.ranges(), 0u);
}

TEST(StreamFences, EveryStreamThatUsedTheBlockIsWaitedFor) {
  StreamFences fences;
  fences.add(1, 0x1000, 0x1000);
  fences.add(3, 0x1000, 0x1000);  // record_stream
  EXPECT_EQ(fences.claim(0x1000, 0x2000, 2), (Streams{1, 3}));
  EXPECT_EQ(fences.ranges(), 0u);
}

TEST(StreamFences, DisjointRangesOrderNothing) {
  StreamFences fences;
  fences.add(1, 0x1000, 0x1000);
  EXPECT_EQ(fences.claim(0x2000, 0x1000, 2), Streams{});
  EXPECT_EQ(fences.claim(0x0, 0x1000, 2), Streams{});
  EXPECT_EQ(fences.ranges(), 1u);
}

TEST(StreamFences, AFreeOverAFencedRangeKeepsOneFence) {
  StreamFences fences;
  fences.add(1, 0x1000, 0x2000);
  fences.add(1, 0x1800, 0x2000);  // overlapping: merged, not refused
  EXPECT_EQ(fences.claim(0x1000, 0x2800, 2), Streams{1});
  EXPECT_EQ(fences.ranges(), 0u);
}

TEST(StreamFences, ClearForgetsEverything) {
  StreamFences fences;
  fences.add(1, 0x1000, 0x1000);
  fences.clear();
  EXPECT_EQ(fences.claim(0x1000, 0x1000, 2), Streams{});
}

}  // namespace
}  // namespace memreplay
