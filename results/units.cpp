#include "results/units.h"

#include <algorithm>
#include <cstdio>

namespace memreplay::results {

namespace {

constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};

int unit_of(uint64_t bytes) {
  int unit = 0;
  for (double value = static_cast<double>(bytes); value >= 1024 && unit < 4; value /= 1024) ++unit;
  return unit;
}

std::string in_unit(uint64_t bytes, int unit, int decimals) {
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, "%.*f %s", unit == 0 ? 0 : decimals,
                static_cast<double>(bytes) / static_cast<double>(uint64_t{1} << (10 * unit)), kUnits[unit]);
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

}  // namespace memreplay::results
