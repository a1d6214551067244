#include "results/units.h"

#include <cstdio>

namespace memreplay::results {

std::string format_bytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, unit == 0 ? "%.0f %s" : "%.2f %s", value, kUnits[unit]);
  return buffer;
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
