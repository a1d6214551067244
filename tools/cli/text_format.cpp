#include "tools/cli/text_format.h"

#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "base/output_file.h"
#include "base/units.h"
#include "proto/input_error.h"
#include "results/byte_count.h"

namespace memreplay::cli {

uint64_t parse_bytes(std::string_view text, std::string_view option) {
  std::string warning;
  const uint64_t bytes = results::parse_bytes(text, option, &warning);
  if (!warning.empty()) warn(warning);
  return bytes;
}

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
