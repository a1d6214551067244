#include "results/check_run.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <set>

#include "proto/input_error.h"
#include "proto/trace_reader.h"
#include "replayer/replay_runner.h"
#include "results/fit_scan.h"
#include "results/replay_batch.h"
#include "results/units.h"

namespace memreplay::results {
namespace {

// Everything that can be refused is refused before the first replay; the warnings are found then.
void refuse_before_replaying(const CheckRequest& request, const Baseline& baseline, bool compare_to_baseline,
                             const std::vector<std::string>& trace_names, std::vector<std::string>& warnings) {
  std::set<std::string> names;
  for (size_t t = 0; t < request.traces.size(); ++t) {
    const std::string& path = request.traces[t];
    const std::string& name = trace_names[t];
    if (!names.insert(name).second)
      throw InputError(path + ": another trace of this check has the name '" + name + "' (baselines key by name)");
    TraceReader reader(path);
    if (!reader.complete() && !request.allow_incomplete)
      throw InputError(path + ": the trace is incomplete (" + reader.truncation_note().value_or("no footer") +
                       "); its numbers would be partial (--allow-incomplete to check it anyway)");
    for (const auto& policy : request.policies)
      if (auto warning = torch_version_warning(path, reader.header(), policy))
        if (std::find(warnings.begin(), warnings.end(), *warning) == warnings.end()) {
          if (request.warn) request.warn(*warning);
          warnings.push_back(std::move(*warning));
        }
    if (compare_to_baseline)
      for (const auto& policy : request.policies)
        if (!baseline.find(name, policy))
          throw InputError(request.baseline + ": no entry for trace '" + name + "' with policy '" + policy +
                           "' (run check --update-baseline to add it)");
  }
}

void save_updated_baseline(const CheckRequest& request, Baseline updated, const CheckOutcome& outcome,
                           const std::vector<BaselineEntry>& fresh) {
  updated.capacity = outcome.capacity;
  updated.tolerances = outcome.tolerances;
  for (const auto& e : fresh) {
    auto it = std::find_if(updated.entries.begin(), updated.entries.end(),
                           [&](const auto& old) { return old.trace == e.trace && old.policy == e.policy; });
    if (it != updated.entries.end())
      *it = e;
    else
      updated.entries.push_back(e);
  }
  save_baseline(updated, request.baseline);
}

}  // namespace

size_t CheckOutcome::failures() const {
  return static_cast<size_t>(std::count_if(cases.begin(), cases.end(), [](const CheckCase& c) { return c.failed(); }));
}

std::map<std::string, double> parse_tolerances(const std::vector<std::string>& specs) {
  std::map<std::string, double> out;
  for (const auto& spec : specs) {
    const auto eq = spec.find('=');
    if (eq == std::string::npos)
      throw InputError("--tolerance " + spec + ": expected METRIC=VALUE, e.g. reserved_peak=2%");
    const std::string name = spec.substr(0, eq);
    check_metric(name);
    std::string value = spec.substr(eq + 1);
    const bool percent = !value.empty() && value.back() == '%';
    if (percent) value.pop_back();
    size_t used = 0;
    double number = -1;
    try {
      number = std::stod(value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != value.size() || number < 0)
      throw InputError("--tolerance " + spec + ": expected a non-negative number or percentage");
    out[name] = percent ? number / 100 : number;
  }
  return out;
}

CheckOutcome run_check(const CheckRequest& request) {
  const auto start = std::chrono::steady_clock::now();
  CheckOutcome outcome;
  outcome.capacity = request.capacity;
  Limits limits = request.limits;
  if (request.capacity) limits.must_fit = true;
  if (limits.max_overhead && *limits.max_overhead < 1)
    throw InputError("--max-overhead: a ratio of reserved to requested peak, >= 1");
  if (request.update_baseline && request.baseline.empty()) throw InputError("--update-baseline needs --baseline FILE");
  if (request.baseline.empty() && !limits.max_reserved && !limits.max_overhead && !limits.must_fit)
    throw InputError(
        "nothing to check against: give --baseline FILE or a limit (--max-reserved, --max-overhead, "
        "--capacity)");

  Baseline baseline;
  const bool compare_to_baseline = !request.baseline.empty() && !request.update_baseline;
  if (!request.baseline.empty() && (compare_to_baseline || std::filesystem::exists(request.baseline)))
    baseline = load_baseline(request.baseline);
  if (compare_to_baseline && baseline.capacity != request.capacity)
    throw InputError(
        request.baseline + ": the baseline was made " +
        (baseline.capacity ? "with --capacity " + format_bytes(*baseline.capacity) : "without --capacity") +
        ", this check runs " + (request.capacity ? "with --capacity " + format_bytes(*request.capacity) : "without") +
        " (the numbers would not compare)");
  outcome.tolerances = baseline.tolerances;
  for (const auto& [k, v] : request.tolerances) outcome.tolerances[k] = v;

  std::vector<std::string> trace_names;
  for (const auto& path : request.traces) trace_names.push_back(trace_name(path));
  refuse_before_replaying(request, baseline, compare_to_baseline, trace_names, outcome.warnings);

  std::vector<BaselineEntry> fresh;
  std::vector<ReplayOptions> bases;
  for (const auto& path : request.traces) {
    ReplayOptions base;
    base.trace_path = path;
    base.device_spec = request.device;
    base.capacity = request.capacity;
    base.trace_device = request.trace_device;
    base.lenient = request.lenient;
    bases.push_back(base);
  }
  // One pass over each trace for all policies; traces in parallel (a real GPU: one at a time).
  const auto all_replays = replay_traces(bases, request.policies, request.device == "sim" ? 0 : 1);
  for (size_t t = 0; t < request.traces.size(); ++t) {
    const auto& replays = all_replays[t];
    for (size_t p = 0; p < request.policies.size(); ++p) {
      const std::string& policy = request.policies[p];
      const BaselineEntry* entry = compare_to_baseline ? baseline.find(trace_names[t], policy) : nullptr;
      std::optional<uint64_t> min_fit;
      if (request.fit || (entry && entry->values.count("min_fit_bytes"))) {
        ReplayOptions probe = bases[t];
        probe.policy_spec = policy;
        min_fit = scan_min_capacity(probe, 1 << 20, 16).smallest_fit_bytes;
      }
      const auto values = metric_values(replays.metrics[p], min_fit);
      outcome.cases.push_back(evaluate_case(trace_names[t], policy, values, entry, outcome.tolerances, limits));
      fresh.push_back({trace_names[t], policy, values});
    }
  }
  outcome.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (request.update_baseline) save_updated_baseline(request, baseline, outcome, fresh);
  return outcome;
}

}  // namespace memreplay::results
