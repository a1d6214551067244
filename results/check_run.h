// `memreplay check` from its request to its cases: everything refusable refused before the first
// replay, every trace × policy replayed (traces in parallel, one pass over each for all its
// policies), each case held against the baseline and the plain limits (check.h), and the baseline
// rewritten when asked. The CLI and the Python API (memreplay.check) print or return the cases.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "results/check.h"

namespace memreplay::results {

struct CheckRequest {
  std::vector<std::string> traces;  // .mrt paths; each named by trace_name()
  std::vector<std::string> policies;
  std::string baseline;  // the baseline file, "" for none
  bool update_baseline = false;  // write the baseline from these replays instead of comparing
  std::map<std::string, double> tolerances;  // overrides of the baseline's (parse_tolerances)
  Limits limits;  // must_fit is set when capacity is
  std::optional<uint64_t> capacity;
  bool fit = false;  // also find each case's smallest fitting capacity
  bool allow_incomplete = false;
  std::string device = "sim";
  uint32_t trace_device = 0;
  bool lenient = false;
  // Told each warning (a trace of another torch release than a policy models: torch_version_warning,
  // replayer/replay_runner.h) once, before the first replay, where set.
  std::function<void(const std::string&)> warn;
};

struct CheckOutcome {
  std::vector<CheckCase> cases;  // traces × policies, in order
  std::map<std::string, double> tolerances;  // those the cases were held to
  std::optional<uint64_t> capacity;
  double seconds = 0;
  std::vector<std::string> warnings;  // each once, in the order they were found
  size_t failures() const;
};

// "reserved_peak=2%" / "overhead=0.05" as {metric: fraction}; InputError naming a bad one.
std::map<std::string, double> parse_tolerances(const std::vector<std::string>& specs);

// Throws InputError for anything refused (see CheckRequest): before any replay where it can.
CheckOutcome run_check(const CheckRequest& request);

}  // namespace memreplay::results
