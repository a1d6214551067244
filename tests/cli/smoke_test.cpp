#include <gtest/gtest.h>
#include "proto/event.h"
TEST(EventKind, NamesRoundTrip) {
  for (uint32_t i = 1; i < memreplay::kEventKindCount; ++i) {
    const auto kind = static_cast<memreplay::EventKind>(i);
    EXPECT_EQ(memreplay::event_kind_from_name(memreplay::event_kind_name(kind)), kind);
  }
}
