#include "tools/cli/command.h"

namespace memreplay::cli {

void add_trace_argument(CLI::App& command, std::string& trace) {
  command.add_option("TRACE", trace, "trace file (.mrt), from `memreplay import` or a recorder")
      ->required()
      ->check(CLI::ExistingFile);
}

void add_json_option(CLI::App& command, std::string& json, const std::string& what) {
  command.add_option("--json", json, "write " + what + " as JSON to FILE (- for stdout)");
}

}  // namespace memreplay::cli
