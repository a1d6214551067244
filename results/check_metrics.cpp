#include "results/check_metrics.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "base/units.h"
#include "proto/input_error.h"
#include "proto/wire_format.h"
#include "results/bounded_json.h"

namespace memreplay::results {

const std::vector<CheckMetric>& check_metrics() {
  static const std::vector<CheckMetric> metrics = {
      {"requested_peak", "requested peak",
       "most bytes the job asked for at once: the floor no allocator can beat (a fall: the trace shrank)", false, 0.10,
       Worse::lower},
      {"reserved_peak", "reserved peak", "peak bytes held from the device (cudaMalloc'd + mapped)", false, 0.01,
       Worse::higher},
      {"overhead", "reserved ÷ requested",
       "reserved peak ÷ requested peak: the waste over the floor no allocator can beat", false, 0.01, Worse::higher},
      {"unallocated_at_peak", "unallocated at peak",
       "1 - allocated/reserved when reserved peaked: reserved bytes not handed out", true, 0.02, Worse::higher},
      {"free_fragmentation_at_peak", "free-space fragmentation at peak",
       "1 - largest free range/all free bytes when reserved peaked: how split up the free space is", true, 0.05,
       Worse::higher},
      {"device_calls", "device calls",
       "device mallocs + frees (cudaMalloc, cudaFree, map, unmap; pool grows and trims)", false, 0.10, Worse::higher},
      {"events", "events", "allocations and frees replayed (a fall: the trace shrank)", false, 0.10, Worse::lower},
      {"oom", "OOM", "1 if an allocation failed, else 0", false, 0.0, Worse::higher},
      {"min_fit_bytes", "smallest fit", "smallest capacity found to fit (fit's bisection; only with --fit)", false,
       0.01, Worse::higher},
  };
  return metrics;
}

const CheckMetric& check_metric(std::string_view name) {
  for (const auto& m : check_metrics())
    if (m.name == name) return m;
  std::string valid;
  for (const auto& m : check_metrics()) valid += (valid.empty() ? "" : ", ") + std::string(m.name);
  throw InputError("unknown metric " + in_quotes(name) + " (metrics: " + valid + ")");
}

double limit_from_baseline(const CheckMetric& metric, double baseline, double tolerance) {
  const double sign = metric.worse == Worse::higher ? 1.0 : -1.0;
  return metric.absolute_tolerance ? baseline + sign * tolerance : baseline * (1 + sign * tolerance);
}

bool past_limit(const CheckMetric& metric, double value, double limit) {
  const double slack = 1e-12 * std::max(1.0, std::abs(limit));
  return metric.worse == Worse::higher ? value > limit + slack : value < limit - slack;
}

MetricValues metric_values(const ReplayMetrics& m, std::optional<uint64_t> min_fit_bytes) {
  MetricValues v;
  v["requested_peak"] = static_cast<double>(m.requested_peak);
  v["reserved_peak"] = static_cast<double>(m.reserved_peak);
  v["overhead"] = m.requested_peak == 0 ? 1.0 : double(m.reserved_peak) / double(m.requested_peak);
  v["unallocated_at_peak"] = m.fragmentation_at_peak;
  v["free_fragmentation_at_peak"] = m.free_fragmentation_at_peak;
  v["device_calls"] = static_cast<double>(m.device_calls.total());  // inline: this library has no replayer
  v["events"] = static_cast<double>(m.events);
  v["oom"] = m.oom_at_event ? 1.0 : 0.0;
  if (min_fit_bytes) v["min_fit_bytes"] = static_cast<double>(*min_fit_bytes);
  return v;
}

namespace {

bool is_bytes(std::string_view metric) {
  return metric == "requested_peak" || metric == "reserved_peak" || metric == "min_fit_bytes";
}
bool is_fraction(std::string_view metric) {
  return metric == "unallocated_at_peak" || metric == "free_fragmentation_at_peak";
}

// A byte count read back from a double (a baseline may hold any finite number).
uint64_t to_bytes(double value) {
  if (!(value > 0)) return 0;
  if (value >= 18446744073709549568.0) return std::numeric_limits<uint64_t>::max();
  return static_cast<uint64_t>(value);
}

std::string printed(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

}  // namespace

std::string format_metric(std::string_view metric, double value) {
  if (is_bytes(metric)) return format_bytes(to_bytes(value));
  if (metric == "overhead") return format_ratio(value);
  if (is_fraction(metric)) return format_percent(value);
  if (metric == "oom") return value > 0 ? "OOM" : "fits";
  return printed("%.0f", value);
}

std::string format_change(std::string_view metric, double before, double after) {
  if (before == after) return "±0";
  if (metric == "oom") return format_metric(metric, before) + " -> " + format_metric(metric, after);
  if (is_fraction(metric)) return printed("%+.1f points", (after - before) * 100);
  if (before == 0) return after == 0 ? "+0.0%" : "new non-zero";
  return printed("%+.1f%%", (after - before) / before * 100);
}

std::optional<std::string> name_problem(std::string_view text) {
  if (text.empty()) return "is empty";
  if (wire::valid_utf8(text) != text) return "is not UTF-8";
  for (const unsigned char c : text)
    if (c < 0x20 || c == 0x7f) return "holds a control character";
  return std::nullopt;
}

}  // namespace memreplay::results
