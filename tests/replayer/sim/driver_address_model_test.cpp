// DriverAddressModel against where the real driver put PyTorch's segments on an H200
// (tests/data/h200_segment_addresses.json, recorded by tools/gpu/torch_replay.py --live-traces),
// plus the rules on small hand-made sequences.
#include "replayer/sim/driver_address_model.h"
#include "base/units.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "tests/support/reference_address_model.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

using testing::read_json;
using testing::source_dir;

constexpr uint64_t kTop = 0x7e00'0000'0000ull;

const nlohmann::json& recorded() {
  static const nlohmann::json doc = read_json(source_dir() / "tests" / "data" / "h200_segment_addresses.json");
  return doc;
}

std::vector<std::string> recorded_rows() {
  std::vector<std::string> rows;
  for (const auto& [name, calls] : recorded()["rows"].items()) rows.push_back(name);
  return rows;
}

class RecordedAddresses : public ::testing::TestWithParam<std::string> {};

// Every cudaMalloc lands where the driver put it, up to one offset for the whole run (the
// window's position is arbitrary). Creating a CUDA stream takes VA in a way the model leaves out
// (docs/driver-address-model.md), so a row is checked up to its first allocation on a stream other
// than the default one (the multistream rows: their first three allocations).
TEST_P(RecordedAddresses, EveryAllocationWhereTheDriverPutIt) {
  const auto& calls = recorded()["rows"][GetParam()];
  DriverAddressModel model(kTop, 1ull << 40);
  std::map<uint64_t, uint64_t> modelled;  // real address -> model's
  std::optional<int64_t> offset;
  size_t allocations = 0;
  for (size_t i = 0; i < calls.size(); ++i) {
    const uint64_t address = calls[i][1];
    if (calls[i][3] != 0) break;  // a side stream was created before this call
    if (calls[i][0] == 1) {
      ASSERT_TRUE(model.release(modelled.at(address))) << "call " << i;
      modelled.erase(address);
      continue;
    }
    const std::optional<uint64_t> placed = model.allocate(calls[i][2]);
    ASSERT_TRUE(placed.has_value());
    modelled[address] = *placed;
    if (!offset) offset = static_cast<int64_t>(address - *placed);
    ++allocations;
    ASSERT_EQ(static_cast<int64_t>(address - *placed), *offset)
        << "call " << i << ": " << calls[i][2] << " bytes placed "
        << (static_cast<int64_t>(*placed + *offset) - static_cast<int64_t>(address)) / static_cast<int64_t>(kMiB)
        << " MiB from where the driver put them";
  }
  EXPECT_GT(allocations, 0u);
}

INSTANTIATE_TEST_SUITE_P(H200, RecordedAddresses, ::testing::ValuesIn(recorded_rows()), [](const auto& info) {
  std::string name = info.param;
  for (char& c : name)
    if (c == '.') c = '_';
  return name;
});

TEST(DriverAddressModel, FirstSmallAllocationsFillTheDriversHoles) {
  DriverAddressModel model(kTop, 1ull << 40);
  EXPECT_EQ(model.allocate(2 * kMiB), kTop + 414 * kMiB);
  EXPECT_EQ(model.allocate(2 * kMiB), kTop + 488 * kMiB);
  EXPECT_EQ(model.allocate(24 * kMiB), kTop - 32 * kMiB);  // 22 MiB left there: too small
  EXPECT_EQ(model.allocate(22 * kMiB), kTop + 490 * kMiB);
}

TEST(DriverAddressModel, ChunksAreRoundedTo32MiBAndTheirTailsReused) {
  DriverAddressModel model(kTop, 1ull << 40);
  (void)model.allocate(2 * kMiB);
  (void)model.allocate(24 * kMiB);  // fills the 24 MiB hole
  const uint64_t big = *model.allocate(98 * kMiB);  // a 128 MiB chunk
  EXPECT_EQ(big, kTop - 128 * kMiB);
  EXPECT_EQ(model.allocate(26 * kMiB), big + 98 * kMiB);  // its 30 MiB tail
  EXPECT_EQ(model.allocate(6 * kMiB), kTop - 160 * kMiB);  // 4 MiB left there: a new chunk
  EXPECT_EQ(model.span_of(big), 98 * kMiB);
}

TEST(DriverAddressModel, NewestChunkFirstThenBestFitInside) {
  DriverAddressModel model(kTop, 1ull << 40);
  (void)model.allocate(2 * kMiB);
  (void)model.allocate(24 * kMiB);
  const uint64_t older = *model.allocate(20 * kMiB);  // [top-32, top): 12 MiB free
  const uint64_t newer = *model.allocate(26 * kMiB);  // [top-64, top-32): 6 MiB free, lower
  EXPECT_EQ(model.allocate(2 * kMiB), newer + 26 * kMiB);  // newest chunk, not lowest hole first
  (void)older;
  // Inside one chunk the smallest hole that fits wins.
  DriverAddressModel one(kTop, 1ull << 40);
  (void)one.allocate(2 * kMiB);
  (void)one.allocate(24 * kMiB);
  const uint64_t a = *one.allocate(10 * kMiB);  // chunk [top-32, top)
  const uint64_t b = *one.allocate(10 * kMiB);
  (void)one.allocate(4 * kMiB);  // 8 MiB left at the top
  ASSERT_TRUE(one.release(a));  // a 10 MiB hole at the bottom
  EXPECT_EQ(one.allocate(2 * kMiB), b + 14 * kMiB);  // the 8 MiB hole, not the 10 MiB one
}

TEST(DriverAddressModel, AnEmptiedChunkGivesItsVaBackButAnExactGapIsPassedOver) {
  DriverAddressModel model(kTop, 1ull << 40);
  (void)model.allocate(2 * kMiB);
  (void)model.allocate(24 * kMiB);
  const uint64_t first = *model.allocate(32 * kMiB);  // [top-32, top)
  const uint64_t second = *model.allocate(32 * kMiB);  // [top-64, top-32)
  ASSERT_TRUE(model.release(first));
  // The 32 MiB gap left is exactly as large as a new 32 MiB chunk: passed over.
  EXPECT_EQ(model.allocate(32 * kMiB), second - 32 * kMiB);
  ASSERT_TRUE(model.release(second));
  // Now [top-64, top) is free: a 32 MiB chunk goes at its top.
  EXPECT_EQ(model.allocate(30 * kMiB), kTop - 32 * kMiB);
  EXPECT_FALSE(model.release(12345));
}

// The model's index and inline arrays against the first, map-and-scan version of the same rules
// (tests/support/reference_address_model.h): random mallocs and frees, small and multi-chunk sizes,
// in a VA window small enough to run out; every address and every refusal identical.
TEST(DriverAddressModel, SameAddressesAsTheReferenceOnRandomCalls) {
  for (const uint64_t va_bytes : {1ull << 40, 3ull << 30}) {
    for (uint32_t seed = 1; seed <= 40; ++seed) {
      std::mt19937_64 random(seed);
      DriverAddressModel model(kTop, va_bytes);
      testing::ReferenceAddressModel reference(kTop, va_bytes);
      std::vector<uint64_t> live;
      size_t refused = 0;
      for (int call = 0; call < 3000; ++call) {
        const bool free = !live.empty() && random() % 100 < 48;
        if (free) {
          const size_t pick = random() % live.size();
          const uint64_t address = live[pick];
          live[pick] = live.back();
          live.pop_back();
          ASSERT_EQ(model.release(address).has_value(), reference.release(address)) << seed << " call " << call;
          continue;
        }
        // Mostly a page or two, sometimes a few MiB over a chunk, rarely hundreds of MiB.
        const uint64_t kind = random() % 100;
        const uint64_t bytes = kind < 70   ? 1 + random() % (4 * kMiB)
                               : kind < 95 ? 1 + random() % (70 * kMiB)
                                           : 1 + random() % (600 * kMiB);
        const std::optional<uint64_t> got = model.allocate(bytes);
        ASSERT_EQ(got, reference.allocate(bytes)) << "seed " << seed << " call " << call << " bytes " << bytes;
        if (got)
          live.push_back(*got);
        else
          ++refused;
      }
      if (va_bytes < (1ull << 40)) EXPECT_GT(refused, 0u) << "seed " << seed << ": the small window never ran out";
    }
  }
}

TEST(DriverAddressModel, ReleaseGivesTheBytesAskedFor) {
  DriverAddressModel model(kTop, 1ull << 40);
  const uint64_t address = *model.allocate(3 * kMiB + 5);
  EXPECT_EQ(model.span_of(address), 4 * kMiB);
  EXPECT_EQ(model.release(address), 3 * kMiB + 5);
  EXPECT_EQ(model.release(address), std::nullopt);
  EXPECT_EQ(model.span_of(address), 0u);
}

}  // namespace
}  // namespace memreplay
