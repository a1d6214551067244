#include "tools/cli/text_format.h"

#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "policies/detail/policy_options.h"
#include "proto/input_error.h"

namespace memreplay::cli {

uint64_t parse_bytes(std::string_view text, std::string_view option) {
  const auto bytes = detail::parse_byte_size(text);  // the policies' option parser reads bytes the same way
  if (!bytes || *bytes == 0)
    throw InputError(std::string(option) + " " + std::string(text) +
                     ": expected bytes, e.g. 8GiB, 512MiB, 1.5GB or 8589934592");
  return *bytes;
}

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

void write_json(const nlohmann::json& value, const std::string& path) {
  if (path == "-") {
    std::cout << value.dump(2) << "\n";
    return;
  }
  std::ofstream out(path);
  out << value.dump(2) << "\n";
  out.close();
  if (!out) throw InputError(path + ": cannot write the JSON output");
}

bool stderr_is_terminal() { return isatty(STDERR_FILENO) != 0; }

}  // namespace memreplay::cli
