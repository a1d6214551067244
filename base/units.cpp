// Byte units (units.h): the parser and the formatters.
#include "base/units.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace memreplay {
namespace {

// Powers of the units parse_byte_size accepts, lower-case.
std::optional<double> unit_scale(std::string_view unit) {
  struct Unit {
    std::string_view name;
    double scale;
  };
  constexpr double k = 1024.0;
  static constexpr Unit kUnits[] = {
      {"", 1},        {"b", 1},         {"k", k},           {"kib", k},           {"m", k * k},
      {"mib", k * k}, {"g", k * k * k}, {"gib", k * k * k}, {"t", k * k * k * k}, {"tib", k * k * k * k},
      {"kb", 1e3},    {"mb", 1e6},      {"gb", 1e9},        {"tb", 1e12},
  };
  for (const Unit& u : kUnits)
    if (u.name == unit) return u.scale;
  return std::nullopt;
}

bool has_letter(std::string_view text) {
  for (const char c : text)
    if (std::isalpha(static_cast<unsigned char>(c))) return true;
  return false;
}

}  // namespace

std::optional<uint64_t> parse_byte_size(std::string_view text) {
  size_t digits = 0;
  while (digits < text.size() && (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.'))
    ++digits;
  if (digits == 0) return std::nullopt;
  std::string unit;
  for (const char c : text.substr(digits))
    if (c != ' ') unit.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  const auto scale = unit_scale(unit);
  if (!scale) return std::nullopt;
  const std::string_view number = text.substr(0, digits);
  if (number.find('.') == std::string_view::npos && *scale == 1) {
    // A plain byte count: exact up to 2^64 - 1 (a double would round it).
    uint64_t bytes = 0;
    const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), bytes);
    if (ec != std::errc{} || end != number.data() + number.size()) return std::nullopt;
    return bytes;
  }
  double value = 0;
  const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (ec != std::errc{} || end != number.data() + number.size()) return std::nullopt;
  const double bytes = value * *scale;
  if (!(bytes < 18446744073709551616.0)) return std::nullopt;  // 2^64
  return bytes < 1 ? 0 : static_cast<uint64_t>(std::llround(bytes));
}

ByteSizeInput parse_byte_input(std::string_view text) {
  const std::string kExamples = std::string(", e.g. 40GiB, 7.5GiB, 512MiB or 80GB (units ") + kByteUnits + ")";
  ByteSizeInput input;
  const bool unitless = !has_letter(text);
  if (unitless && text.find('.') != std::string_view::npos) {
    input.error = std::string("a fraction needs a unit (7.5 bytes is not a size)").append(kExamples);
    return input;
  }
  const auto bytes = parse_byte_size(text);
  if (!bytes) {
    input.error = std::string("expected bytes with a unit").append(kExamples);
    return input;
  }
  if (*bytes == 0) {  // a size, but no capacity or limit can be empty (or under a byte)
    input.error = std::string("a size of 0 bytes is refused").append(kExamples);
    return input;
  }
  input.bytes = bytes;
  input.unitless = unitless;
  return input;
}

namespace {

constexpr const char* kUnitNames[] = {"B", "KiB", "MiB", "GiB", "TiB"};

int unit_of(uint64_t bytes) {
  int unit = 0;
  for (double value = static_cast<double>(bytes); value >= 1024 && unit < 4; value /= 1024) ++unit;
  return unit;
}

std::string in_unit(uint64_t bytes, int unit, int decimals) {
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, "%.*f %s", unit == 0 ? 0 : decimals,
                static_cast<double>(bytes) / static_cast<double>(uint64_t{1} << (10 * unit)), kUnitNames[unit]);
  return buffer;
}

}  // namespace

std::string format_bytes(uint64_t bytes) { return in_unit(bytes, unit_of(bytes), 2); }

std::pair<std::string, std::string> format_bytes_apart(uint64_t a, uint64_t b) {
  if (a == b) return {format_bytes(a), format_bytes(b)};
  const int unit = unit_of(std::max(a, b));
  for (int decimals = 2; decimals <= 6; ++decimals) {
    std::string x = in_unit(a, unit, decimals), y = in_unit(b, unit, decimals);
    if (x != y) return {std::move(x), std::move(y)};
  }
  return {std::to_string(a) + " bytes", std::to_string(b) + " bytes"};
}

std::string format_percent(double fraction) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f%%", fraction * 100);
  return buffer;
}

std::string format_ratio(double ratio) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3f×", ratio);
  return buffer;
}

}  // namespace memreplay
