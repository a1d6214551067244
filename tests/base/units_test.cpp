// Byte units (base/units.h): the constants and literals, the one byte-size parser with the
// stricter rules for what people type, and the formatters the CLI and the results print with.
#include "base/units.h"

#include <gtest/gtest.h>

namespace memreplay {
namespace {

using namespace memreplay::literals;

TEST(Units, ConstantsAndLiteralsArePowersOf1024) {
  EXPECT_EQ(kKiB, 1024u);
  EXPECT_EQ(kMiB, 1024u * 1024u);
  EXPECT_EQ(kGiB, 1ull << 30);
  EXPECT_EQ(kTiB, 1ull << 40);
  static_assert(64_MiB == 64 * kMiB);
  static_assert(3_KiB == 3072);
  static_assert(2_GiB == 2 * kGiB);
  static_assert(1_TiB == kTiB);
}

TEST(Units, ByteSizesTakeBinaryAndDecimalUnits) {
  EXPECT_EQ(parse_byte_size("1GiB"), 1ull << 30);
  EXPECT_EQ(parse_byte_size("512MiB"), 512 * kMiB);
  EXPECT_EQ(parse_byte_size("512m"), 512 * kMiB);
  EXPECT_EQ(parse_byte_size("64MB"), 64'000'000u);
  EXPECT_EQ(parse_byte_size("1.5GB"), 1'500'000'000u);
  EXPECT_EQ(parse_byte_size("4096"), 4096u);
  EXPECT_EQ(parse_byte_size("0"), 0u);
  EXPECT_EQ(parse_byte_size("18446744073709551615"), UINT64_MAX);  // exact, not through a double
  EXPECT_EQ(parse_byte_size("18446744073709551616"), std::nullopt);
  EXPECT_EQ(parse_byte_size("17179869184GiB"), std::nullopt);  // 2^64 bytes
  for (const char* bad : {"", "GiB", "lots", "1XB", "1.2.3MiB", "-1", "1e9"})
    EXPECT_EQ(parse_byte_size(bad), std::nullopt) << bad;
}

TEST(Units, ATypedSizeNeedsAUnitForAFractionAndIsNeverZero) {
  const ByteSizeInput gib = parse_byte_input("7.5GiB");
  EXPECT_EQ(gib.bytes, 7.5 * kGiB);
  EXPECT_FALSE(gib.unitless);
  const ByteSizeInput plain = parse_byte_input("8589934592");
  EXPECT_EQ(plain.bytes, 8 * kGiB);
  EXPECT_TRUE(plain.unitless);  // read as bytes; the caller warns
  const ByteSizeInput fraction = parse_byte_input("7.5");
  EXPECT_FALSE(fraction.bytes);
  EXPECT_EQ(
      fraction.error,
      std::string("a fraction needs a unit (7.5 bytes is not a size), e.g. 40GiB, 7.5GiB, 512MiB or 80GB (units ") +
          kByteUnits + ")");
  for (const char* zero : {"0", "0GiB", "0.1B"}) {
    const ByteSizeInput refused = parse_byte_input(zero);
    EXPECT_FALSE(refused.bytes) << zero;
    EXPECT_EQ(refused.error, std::string("a size of 0 bytes is refused, e.g. 40GiB, 7.5GiB, 512MiB or 80GB (units ") +
                                 kByteUnits + ")")
        << zero;
  }
  for (const char* bad : {"", "lots", "GiB", "-1GiB"}) {
    const ByteSizeInput refused = parse_byte_input(bad);
    EXPECT_FALSE(refused.bytes) << bad;
    EXPECT_EQ(refused.error,
              std::string("expected bytes with a unit, e.g. 40GiB, 7.5GiB, 512MiB or 80GB (units ") + kByteUnits + ")")
        << bad;
  }
}

TEST(Units, FormatsAsPeopleReadThem) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(1024), "1.00 KiB");
  EXPECT_EQ(format_bytes(1264582656), "1.18 GiB");
  EXPECT_EQ(format_bytes(3 * kTiB), "3.00 TiB");
  EXPECT_EQ(format_bytes(2048 * kTiB), "2048.00 TiB");  // no unit past TiB
  EXPECT_EQ(format_percent(0.4912), "49.1%");
  EXPECT_EQ(format_ratio(1.53), "1.530×");
}

}  // namespace
}  // namespace memreplay
