// The pytorch policy on a state adopted from a trace that starts mid-run, which an allocator
// without this policy's max_split_size made: a free oversize piece of a split segment is no
// segment, and the release paths pass it over (they handed it to cudaFree: "internal error: the
// device refused the free of ..., which its caller believed it held", on gpt2_train.truncated
// under max_split_size_mb:64 and a capacity).
#include <gtest/gtest.h>

#include "base/units.h"
#include "policies/registry.h"
#include "replayer/sim/sim_device.h"

namespace memreplay {
namespace {

TEST(PytorchAdoptedState, FreeOversizePiecesOfASplitSegmentAreNeverFreedAsSegments) {
  SimDevice device(SimDevice::Options{.capacity = 300 * kMiB});
  const auto policy = PolicyRegistry::instance().create("pytorch:max_split_size_mb:64", device);
  // A 256 MiB segment with a live 2 MiB block in its middle: two free 127 MiB pieces, oversize.
  const auto segment = policy->adopt_segment(256 * kMiB, 0);
  ASSERT_TRUE(segment);
  ASSERT_TRUE(policy->adopt_block(*segment + 127 * kMiB, 2 * kMiB, 2 * kMiB, 0));
  // 100 MiB fits neither the cap's room nor (oversize rules) those pieces: the retry ladder finds
  // no whole free segment to release, and the request is an OOM with nothing freed.
  EXPECT_FALSE(policy->allocate(100 * kMiB, 0).has_value());
  EXPECT_EQ(device.counters().free_calls, 0u);
  EXPECT_EQ(device.counters().reserved_bytes, 256 * kMiB);
  // A whole free segment is still released when room is needed: the live block's segment stays.
  const auto other = policy->adopt_segment(20 * kMiB, 0);
  ASSERT_TRUE(other);
  EXPECT_TRUE(policy->allocate(40 * kMiB, 0).has_value());  // 276 + 40 > 300: the 20 MiB one goes
  EXPECT_EQ(device.counters().free_calls, 1u);
}

}  // namespace
}  // namespace memreplay
