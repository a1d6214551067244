#include "tools/cli/text_format.h"

#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "base/output_file.h"
#include "policies/detail/policy_options.h"
#include "proto/input_error.h"
#include "results/units.h"

namespace memreplay::cli {

uint64_t parse_bytes(std::string_view text, std::string_view option) {
  const std::string shown = "'" + std::string(text) + "'";
  const auto refuse = [&](const std::string& why) {
    return InputError(std::string(option) + " " + shown + ": " + why + ", e.g. 40GiB, 7.5GiB, 512MiB or 80GB (units " +
                      detail::kByteUnits + ")");
  };
  bool has_unit = false;
  for (const char c : text) has_unit = has_unit || std::isalpha(static_cast<unsigned char>(c));
  if (!has_unit && text.find('.') != std::string_view::npos)
    throw refuse("a fraction needs a unit (7.5 bytes is not a size)");
  const auto bytes = detail::parse_byte_size(text);  // the policies' option parser reads bytes the same way
  if (!bytes || *bytes == 0) throw refuse("expected bytes with a unit");
  if (!has_unit)
    warn(std::string(option) + " " + std::string(text) + " has no unit: read as " + std::to_string(*bytes) +
         " bytes (" + format_bytes(*bytes) + ")");
  return *bytes;
}

std::string format_bytes(uint64_t bytes) { return results::format_bytes(bytes); }
std::string format_percent(double fraction) { return results::format_percent(fraction); }

void write_json(const nlohmann::json& value, const std::string& path) {
  if (path == "-") {
    std::cout << value.dump(2) << "\n";
    return;
  }
  write_file_atomically(path, value.dump(2) + "\n");
}

void write_file_atomically(const std::string& path, const std::string& text) { write_output_file(path, text); }

void warn(const std::string& message) { std::cerr << "memreplay: warning: " << message << "\n"; }

bool stderr_is_terminal() { return isatty(STDERR_FILENO) != 0; }

}  // namespace memreplay::cli
