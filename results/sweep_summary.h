// `memreplay sweep-summary`: a fleet's sweep results (one file per shard, or any number of them)
// merged into one verdict per job and fleet totals:
//   - per trace, the best setting (best_setting.h) among the policies replayed uncapped (a `none`
//     task, or the ceiling replay of a `fit` task) and the reserved bytes it saves over the
//     current setting (the `pytorch` default unless told otherwise);
//   - whether the job fits on each GPU size (24, 40, 80 GiB unless told otherwise), under the
//     current setting and under the best one. A task at exactly that capacity says so outright;
//     else a `fit` task: it fits at every capacity from fits_above_bytes up, at none below
//     min_fit_bytes, and at the capacities its search tested as they went; else nothing fits
//     below the requested peak. Anything else is not known (fitting need not be monotonic).
// A task present in several files (a shard run twice) counts once.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "results/best_setting.h"

namespace memreplay::results {

enum class Fits { no, yes, unknown };

struct SummaryOptions {
  std::string current_policy = "pytorch";
  double device_call_factor = kDeviceCallFactor;
  std::vector<uint64_t> gpu_bytes = {uint64_t{24} << 30, uint64_t{40} << 30, uint64_t{80} << 30};
};

struct PolicyVerdict {
  std::string policy;
  std::optional<SettingOutcome> uncapped;
  std::vector<Fits> fits;  // per options.gpu_bytes
};

struct TraceVerdict {
  std::string name;
  std::string trace;  // its path, as the first line of it says
  uint64_t requested_peak = 0;
  std::vector<PolicyVerdict> policies;  // by policy spec
  std::optional<size_t> current;  // index of the current setting in `policies`, when replayed uncapped
  std::optional<size_t> best;
  uint64_t saved_bytes = 0;  // current's reserved peak - best's
  uint64_t errors = 0;  // error lines
  std::string first_error;  // the first by text

  const PolicyVerdict* current_policy() const { return current ? &policies[*current] : nullptr; }
  const PolicyVerdict* best_policy() const { return best ? &policies[*best] : nullptr; }
};

struct FleetTotals {
  uint64_t traces = 0;
  uint64_t tasks = 0;  // distinct task lines
  uint64_t error_tasks = 0;
  uint64_t duplicate_lines = 0;  // lines of a task already counted
  uint64_t torn_lines = 0;  // a last line without its newline (a sweep killed mid-write), skipped
  uint64_t traces_with_saving = 0;  // whose best setting reserves less than the current one
  uint64_t current_reserved_bytes = 0;  // sum of the current setting's reserved peaks
  uint64_t saved_bytes = 0;
  // Per GPU size: jobs that fit under the current setting / under the best, and those not known.
  std::vector<uint64_t> fit_current, fit_best, unknown_current, unknown_best;
};

struct SweepSummary {
  SummaryOptions options;
  std::vector<TraceVerdict> traces;  // the most reserved bytes saved first, then by name
  FleetTotals totals;
};

// Reads the result files (JSON Lines from `memreplay sweep` or memreplay.dask). Throws
// InputError naming the file, the line and its byte offset for a whole line that is not a result.
SweepSummary summarize_sweep(const std::vector<std::string>& files, const SummaryOptions& options = {});

// Renderings of a summary: a table for a terminal, CSV (one row per trace), Markdown (the traces'
// table and the totals), JSON.
std::string summary_table(const SweepSummary& summary);
std::string summary_csv(const SweepSummary& summary);
std::string summary_markdown(const SweepSummary& summary);
nlohmann::json summary_json(const SweepSummary& summary);

}  // namespace memreplay::results
