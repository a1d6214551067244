// The CI gate behind `memreplay check`: each trace × policy replayed, its metrics held against a
// committed baseline (within a tolerance per metric) and against plain limits. Every metric is
// "lower is better"; only a rise past its limit is a regression.
//
//   limit = baseline × (1 + tolerance)   for relative metrics (bytes, ratios, counts)
//   limit = baseline + tolerance         for the two fragmentation fractions (points of 0..1)
//   limit = baseline                     for oom (a replay that fitted must still fit)
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "replayer/metrics.h"

namespace memreplay::results {

inline constexpr int kBaselineSchemaVersion = 1;
inline constexpr int kCheckResultSchemaVersion = 1;

struct CheckMetric {
  std::string_view name;  // key in the baseline and in --tolerance
  std::string_view description;  // one plain line, for the Markdown legend and --help
  bool absolute_tolerance;  // tolerance added (fractions) rather than multiplied
  double default_tolerance;
};

// Every metric a baseline holds, in the order they are printed.
const std::vector<CheckMetric>& check_metrics();
// Throws InputError naming `name` and listing the valid names when it is not a metric.
const CheckMetric& check_metric(std::string_view name);

// The numbers of one trace × policy that check compares; min_fit_bytes only when computed.
using MetricValues = std::map<std::string, double>;
MetricValues metric_values(const ReplayMetrics& m, std::optional<uint64_t> min_fit_bytes);

struct BaselineEntry {
  std::string trace;  // the trace's name: its file name without directory and .mrt
  std::string policy;  // the spec as given to --policy
  MetricValues values;
};

struct Baseline {
  std::optional<uint64_t> capacity;  // the --capacity the replays ran under
  std::map<std::string, double> tolerances;  // written by --update-baseline, overridable
  std::vector<BaselineEntry> entries;
  const BaselineEntry* find(const std::string& trace, const std::string& policy) const;
};

// Reads a baseline; InputError (naming the file) for bad JSON, another schema version, an
// unknown metric name. save_baseline writes through a temporary file.
Baseline load_baseline(const std::string& path);
void save_baseline(const Baseline& baseline, const std::string& path);

struct Limits {
  std::optional<uint64_t> max_reserved;  // --max-reserved
  std::optional<double> max_overhead;  // --max-overhead: reserved peak ÷ requested peak
  bool must_fit = false;  // --capacity given: an OOM under it fails
};

struct Finding {
  std::string metric;
  double value = 0;
  std::optional<double> baseline;  // none for a plain limit
  double limit = 0;
  bool regression = false;
  std::string source;  // "baseline" or the option ("--max-reserved")
};

struct CheckCase {
  std::string trace;
  std::string policy;
  MetricValues values;
  std::vector<Finding> findings;  // every comparison made, passing ones included
  bool failed() const;
};

// Compares one case. `entry` is null when no baseline is used.
CheckCase evaluate_case(const std::string& trace, const std::string& policy, const MetricValues& values,
                        const BaselineEntry* entry, const std::map<std::string, double>& tolerances,
                        const Limits& limits);

// The trace's name as baselines key it: "runs/gpt2_train.mrt" -> "gpt2_train".
std::string trace_name(const std::string& path);

// Views of the result (Principle 7: results are data, the rest are views).
nlohmann::json check_result_json(const std::vector<CheckCase>& cases, const std::map<std::string, double>& tolerances,
                                 std::optional<uint64_t> capacity);
std::string junit_xml(const std::vector<CheckCase>& cases, double seconds);
std::string markdown_summary(const std::vector<CheckCase>& cases);
// One line per regression: "gpt2_train pytorch: reserved_peak 1.20 GiB > limit 1.11 GiB (baseline 1.10 GiB, +1%)".
std::string describe_finding(const CheckCase& c, const Finding& f);
std::string format_metric(std::string_view metric, double value);

}  // namespace memreplay::results
