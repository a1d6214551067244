// The numbers `memreplay check` holds against a baseline: what each means, which way is worse,
// its default tolerance, and how one replay's metrics give them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "replayer/metrics.h"

namespace memreplay::results {

// Which way a metric regresses. Most are costs (lower is better: a rise past the limit fails);
// the size of the job itself (requested peak, events) is a guard: a fall past the limit says the
// trace shrank, a run that broke off or a recording that missed the job, not an allocator win.
enum class Worse { higher, lower };

struct CheckMetric {
  std::string_view name;  // key in the baseline and in --tolerance
  std::string_view label;  // for tables: "reserved peak"
  std::string_view description;  // one plain line, for the Markdown legend and --help
  bool absolute_tolerance;  // tolerance added (fractions) rather than multiplied
  double default_tolerance;
  Worse worse;
};

// Every metric a baseline holds, in the order they are printed.
const std::vector<CheckMetric>& check_metrics();
// Throws InputError naming `name` and listing the valid names when it is not a metric.
const CheckMetric& check_metric(std::string_view name);

// The bound a value is held to: baseline ± tolerance (added for absolute metrics, else a
// fraction of the baseline), below for Worse::higher, above for Worse::lower. oom's tolerance is
// 0: a replay that fitted must still fit.
double limit_from_baseline(const CheckMetric& metric, double baseline, double tolerance);
// Whether `value` is past `limit` in the metric's worse direction (a relative epsilon of 1e-12).
bool past_limit(const CheckMetric& metric, double value, double limit);

// The numbers of one trace × policy that check compares; min_fit_bytes only when computed.
using MetricValues = std::map<std::string, double>;
MetricValues metric_values(const ReplayMetrics& m, std::optional<uint64_t> min_fit_bytes);

// "7.53 GiB", "1.12x", "36.1%", "OOM", "15".
std::string format_metric(std::string_view metric, double value);
// The change from `before` to `after` as shown in tables and update lines: "+10.0%" for relative
// metrics, "+2.1 points" for the fractions, "fits -> OOM" for oom.
std::string format_change(std::string_view metric, double before, double after);

// Why `text` cannot name a trace or policy ("is empty", "is not UTF-8", "holds a control
// character"), or nullopt: names go into one-line messages, JSON, JUnit and Markdown.
std::optional<std::string> name_problem(std::string_view text);

}  // namespace memreplay::results
