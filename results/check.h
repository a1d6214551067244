// The rules of the CI gate behind `memreplay check`: one trace × policy case held against its
// baseline entry (within a tolerance per metric) and against plain limits.
//
//   limit = baseline × (1 ± tolerance)   for relative metrics (bytes, ratios, counts)
//   limit = baseline ± tolerance         for the two fragmentation fractions (points of 0..1)
//   limit = baseline                     for oom (a replay that fitted must still fit)
// with + for the costs (a rise past the limit fails) and − for the job's size, requested peak and
// events (a fall past it fails: the trace shrank). Besides:
//   - a trace that requested no memory fails (an empty recording checks nothing);
//   - a case with no baseline entry is new: it fails unless new cases are allowed;
//   - a replay that ran out of memory fails every limit and every baseline metric, whatever its
//     numbers (they cover only the events before the failure).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "results/baseline.h"
#include "results/check_metrics.h"

namespace memreplay::results {

struct Limits {
  std::optional<uint64_t> max_reserved;  // --max-reserved
  std::optional<double> max_overhead;  // --max-overhead: reserved peak ÷ requested peak
  bool must_fit = false;  // --capacity given: an OOM under it fails
};

// What lets a case pass that would otherwise fail, one flag each.
struct Allowances {
  bool allow_new = false;  // --allow-new: a case without a baseline entry
  bool allow_shrink = false;  // --allow-shrink: requested peak or events below the baseline's
  bool allow_empty = false;  // --allow-empty: a trace that requested no memory
  bool accept = false;  // --accept (with --update-baseline): changes against the old baseline
};

struct Finding {
  std::string metric;
  double value = 0;
  std::optional<double> baseline;  // none for a plain limit
  double limit = 0;
  Worse worse = Worse::higher;  // which side of the limit fails
  bool regression = false;
  // "baseline", the option of a plain limit ("--max-reserved"), "replay" (an OOM), "trace" (empty)
  std::string source;
  std::string note;  // when more than the comparison decided it: an OOM, an empty trace, a flag
};

// Where a replay ran out of memory.
struct OomPoint {
  uint64_t event = 0;  // replay index of the failing allocation
  uint64_t request_bytes = 0;
};

struct CaseInput {
  std::string trace;
  std::string policy;
  MetricValues values;
  std::optional<OomPoint> oom;
};

struct CheckCase {
  std::string trace;
  std::string policy;
  MetricValues values;
  std::vector<Finding> findings;  // every comparison made, passing ones included
  bool is_new = false;  // a baseline is in use and has no entry for this case
  bool new_allowed = false;
  std::optional<OomPoint> oom;

  // A regression, or new and not allowed.
  bool failed() const;
  // "failed", "new" (passing, or failing for being new alone) or "passed".
  std::string status() const;
};

// Tolerance of `metric`: `tolerances` (the baseline's, overridden by --tolerance) or its default.
double tolerance_of(const CheckMetric& metric, const std::map<std::string, double>& tolerances);

// Holds one case to the rules above. `entry` is its baseline entry, null when it has none;
// `baseline_in_use` says whether a baseline is compared at all (without one no case is new).
CheckCase evaluate_case(const CaseInput& input, const BaselineEntry* entry, bool baseline_in_use,
                        const std::map<std::string, double>& tolerances, const Limits& limits, const Allowances& allow);

// The trace's name as baselines key it when none is given: "runs/gpt2_train.mrt" -> "gpt2_train".
std::string trace_name(const std::string& path);

// One line per finding: "gpt2_train pytorch: reserved_peak 7.53 GiB > limit 6.91 GiB (baseline 6.84 GiB)".
std::string describe_finding(const CheckCase& c, const Finding& f);

}  // namespace memreplay::results
