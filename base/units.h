// Byte units, in one place for every layer: constants (kMiB), literals (64_MiB), the one parser of
// byte sizes people type ("40GiB", "512MiB", "80GB") and the one formatter of sizes people read
// (1264582656 -> "1.18 GiB"). The CLI, the policy options and a Python API all call these.
//
// Units, case-insensitive: B, KiB/K, MiB/M, GiB/G, TiB/T (powers of 1024), KB, MB, GB, TB (powers
// of 1000); a number may have a fraction when it has a unit ("7.5GiB"). A plain integer is bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace memreplay {

inline constexpr uint64_t kKiB = uint64_t{1} << 10;
inline constexpr uint64_t kMiB = uint64_t{1} << 20;
inline constexpr uint64_t kGiB = uint64_t{1} << 30;
inline constexpr uint64_t kTiB = uint64_t{1} << 40;

namespace literals {
constexpr uint64_t operator""_KiB(unsigned long long n) { return n * kKiB; }
constexpr uint64_t operator""_MiB(unsigned long long n) { return n * kMiB; }
constexpr uint64_t operator""_GiB(unsigned long long n) { return n * kGiB; }
constexpr uint64_t operator""_TiB(unsigned long long n) { return n * kTiB; }
}  // namespace literals

// "8GiB" -> 8589934592, "1.5GB" -> 1500000000, "4096" -> 4096, "0" -> 0; nullopt when the text is
// not a byte size or exceeds 2^64 - 1. A plain byte count is exact (not read through a double).
std::optional<uint64_t> parse_byte_size(std::string_view text);
// The units parse_byte_size reads, for error messages.
inline constexpr const char* kByteUnits =
    "B, KiB, MiB, GiB, TiB (powers of 1024; K, M, G, T mean the same) or KB, MB, GB, TB (powers of 1000), "
    "any case";

// A size a person typed for an option (--capacity 40GiB): stricter than parse_byte_size. Refused:
// empty text, no number, an unknown unit, 0 bytes, and a fraction without a unit ("7.5" bytes is
// no size). A plain integer is read as bytes but marked `unitless` (likely a forgotten unit: the
// caller warns).
struct ByteSizeInput {
  std::optional<uint64_t> bytes;  // nullopt: refused, `error` says why
  bool unitless = false;
  // One phrase with examples, e.g. "expected bytes with a unit, e.g. 40GiB, 7.5GiB, 512MiB or 80GB".
  std::string error;
};
ByteSizeInput parse_byte_input(std::string_view text);

// 1264582656 -> "1.18 GiB", 512 -> "512 B" (powers of 1024, two decimals above bytes).
std::string format_bytes(uint64_t bytes);
// Two sizes in one unit with as many decimals as it takes for them to read differently (a fitting
// and a failing capacity must never print the same); equal sizes read the same.
std::pair<std::string, std::string> format_bytes_apart(uint64_t a, uint64_t b);
// 0.4912 -> "49.1%".
std::string format_percent(double fraction);
// 1.53 -> "1.530×".
std::string format_ratio(double ratio);

}  // namespace memreplay
