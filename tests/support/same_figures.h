// Two replays that must agree on what a user reads off them: the three peaks and the device calls.
#pragma once

#include <gtest/gtest.h>

#include "replayer/metrics.h"

namespace memreplay::testing {

inline void expect_same_figures(const ReplayMetrics& actual, const ReplayMetrics& expected) {
  EXPECT_EQ(actual.reserved_peak, expected.reserved_peak);
  EXPECT_EQ(actual.allocated_peak, expected.allocated_peak);
  EXPECT_EQ(actual.requested_peak, expected.requested_peak);
  EXPECT_EQ(actual.device_alloc_calls, expected.device_alloc_calls);
  EXPECT_EQ(actual.device_free_calls, expected.device_free_calls);
  EXPECT_EQ(actual.device_calls, expected.device_calls);
}

}  // namespace memreplay::testing
