#include "tools/cli/text_format.h"

#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "proto/input_error.h"

namespace memreplay::cli {

uint64_t parse_bytes(std::string_view text, std::string_view option) {
  const auto fail = [&]() -> InputError {
    return InputError(std::string(option) + " " + std::string(text) +
                      ": expected bytes, e.g. 8GiB, 512MiB, 1.5GB or 8589934592");
  };
  size_t digits = 0;
  while (digits < text.size() && (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.'))
    ++digits;
  if (digits == 0) throw fail();
  double number = 0;
  try {
    size_t used = 0;
    number = std::stod(std::string(text.substr(0, digits)), &used);
    if (used != digits) throw fail();
  } catch (const std::logic_error&) {
    throw fail();
  }
  std::string unit;
  for (char c : text.substr(digits))
    if (c != ' ') unit.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  double scale = 0;
  if (unit.empty() || unit == "b") scale = 1;
  else if (unit == "kib" || unit == "k") scale = 1024.0;
  else if (unit == "mib" || unit == "m") scale = 1024.0 * 1024;
  else if (unit == "gib" || unit == "g") scale = 1024.0 * 1024 * 1024;
  else if (unit == "tib" || unit == "t") scale = 1024.0 * 1024 * 1024 * 1024;
  else if (unit == "kb") scale = 1e3;
  else if (unit == "mb") scale = 1e6;
  else if (unit == "gb") scale = 1e9;
  else if (unit == "tb") scale = 1e12;
  else throw fail();
  const double bytes = number * scale;
  if (!(bytes >= 1) || bytes > 1.8e19) throw fail();
  return static_cast<uint64_t>(std::llround(bytes));
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
