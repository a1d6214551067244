#include "results/check_run.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "base/output_file.h"
#include "base/units.h"
#include "proto/input_error.h"
#include "proto/trace_reader.h"
#include "results/baseline_lock.h"
#include "results/bounded_json.h"
#include "results/fit_scan.h"
#include "results/replay_batch.h"

namespace memreplay::results {
namespace {

namespace fs = std::filesystem;

struct NamedTrace {
  std::string path;
  std::string name;
};

// One path per file, however it is spelled (./a, a, a symlink to it).
std::string same_file_key(const std::string& path) {
  std::error_code ec;
  const fs::path canonical = fs::weakly_canonical(path, ec);
  return ec ? path : canonical.string();
}

void check_request(const CheckRequest& r) {
  if (r.traces.empty()) throw InputError("check: no TRACE given");
  if (r.policies.empty()) throw InputError("check: no --policy given (a spec, or all)");
  for (const auto& spec : r.policies)
    if (const auto problem = name_problem(spec)) throw InputError("--policy " + in_quotes(spec) + ": " + *problem);
  for (const auto& [name, value] : r.tolerances) {
    check_metric(name);
    if (const auto problem = tolerance_problem(value)) throw InputError("--tolerance " + name + ": " + *problem);
  }
  if (r.max_overhead && !(std::isfinite(*r.max_overhead) && *r.max_overhead >= 1))
    throw InputError("--max-overhead: a ratio of reserved to requested peak, a finite number >= 1");
  if (r.max_reserved && *r.max_reserved == 0) throw InputError("--max-reserved: expected bytes > 0");
  if (r.capacity && *r.capacity == 0) throw InputError("--capacity: expected bytes > 0");
  if (r.update_baseline && r.baseline.empty()) throw InputError("--update-baseline needs --baseline FILE");
  if (r.allow.accept && !r.update_baseline) throw InputError("--accept goes with --update-baseline");
  if (r.baseline.empty() && !r.max_reserved && !r.max_overhead && !r.capacity)
    throw InputError(
        "nothing to check against: give --baseline FILE or a limit (--max-reserved, --max-overhead, --capacity)");

  // Each output its own file, none of them an input: a report written over a trace loses it.
  std::map<std::string, std::string> files;  // same_file_key -> what it is
  const auto claim = [&](const std::string& path, const std::string& what) {
    if (path.empty()) return;
    const auto [it, fresh] = files.emplace(same_file_key(path), what);
    if (!fresh && !(it->second == what && what == "TRACE"))
      throw InputError(path + ": given as " + it->second + " and as " + what + " (outputs need files of their own)");
  };
  for (const auto& t : r.traces) claim(t.path, "TRACE");
  claim(r.baseline, "--baseline");
  claim(r.outputs.junit, "--junit");
  claim(r.outputs.markdown, "--markdown");
  claim(r.outputs.json, "--json");
}

std::vector<NamedTrace> name_traces(const std::vector<TraceInput>& traces) {
  std::vector<NamedTrace> out;
  std::map<std::string, std::string> paths_by_name;
  for (const auto& t : traces) {
    const std::string name = t.name.value_or(trace_name(t.path));
    if (const auto problem = name_problem(name))
      throw InputError(t.path + ": the trace name " + in_quotes(name) + " " + *problem +
                       (t.name ? "" : " (name it with --name or NAME=PATH)"));
    const auto [it, fresh] = paths_by_name.emplace(name, t.path);
    if (!fresh)
      throw InputError(t.path + ": trace name " + in_quotes(name) + " is also that of " + it->second +
                       " (baselines key by name: give each its own with NAME=PATH or --name)");
    out.push_back({t.path, name});
  }
  return out;
}

// A trace whose numbers would be partial, or that has no event to read at all, is refused.
void check_readable(const NamedTrace& t, bool allow_incomplete) {
  TraceReader reader(t.path);
  if (reader.complete()) return;
  const std::string note = reader.truncation_note().value_or("no footer");
  if (!allow_incomplete)
    throw InputError(t.path + ": the trace is incomplete (" + note +
                     "); its numbers would be partial (--allow-incomplete to check it anyway)");
  if (const auto loss = reader.loss(); loss && loss->whole_events == 0)
    throw InputError(t.path + ": the trace is cut off before its first whole chunk: no event to check (" + note + ")");
}

std::map<std::string, double> effective_tolerances(const Baseline& baseline, const CheckRequest& r) {
  std::map<std::string, double> out = baseline.tolerances;
  for (const auto& [k, v] : r.tolerances) out[k] = v;
  return out;
}

std::string capacity_text(const std::optional<uint64_t>& capacity) {
  return capacity ? "with --capacity " + format_bytes(*capacity) : "without --capacity";
}

std::optional<OomPoint> oom_point(const ReplayMetrics& m) {
  if (!m.oom_at_event) return std::nullopt;
  return OomPoint{*m.oom_at_event, m.oom_request_bytes.value_or(0)};
}

std::vector<CheckCase> evaluate_all(const CheckRequest& r, const std::vector<NamedTrace>& traces,
                                    const std::vector<std::string>& policies, const Baseline& baseline,
                                    bool baseline_in_use, const std::map<std::string, double>& tolerances,
                                    std::vector<std::string>& warnings) {
  std::vector<ReplayOptions> bases;
  for (const auto& t : traces) {
    ReplayOptions base;
    base.trace_path = t.path;
    base.device_spec = r.device;
    base.capacity = r.capacity;
    base.trace_device = r.trace_device;
    base.lenient = r.lenient;
    bases.push_back(base);
  }
  // One pass over each trace for all policies; traces in parallel (a real GPU: one at a time).
  const auto replays = replay_traces(bases, policies, r.device == "sim" ? 0 : 1);
  const Limits limits{r.max_reserved, r.max_overhead, r.capacity.has_value()};
  Allowances allow = r.allow;
  allow.allow_new = allow.allow_new || r.update_baseline;  // an update adds them
  std::vector<CheckCase> cases;
  for (size_t t = 0; t < traces.size(); ++t) {
    if (!replays[t].metrics.empty())
      if (auto skipped = skipped_warning(traces[t].path, replays[t].metrics.front())) warnings.push_back(*skipped);
    for (size_t p = 0; p < policies.size(); ++p) {
      const ReplayMetrics& m = replays[t].metrics[p];
      const BaselineEntry* entry = baseline_in_use ? baseline.find(traces[t].name, policies[p]) : nullptr;
      std::optional<uint64_t> min_fit;
      const bool fit = r.fit || (entry && entry->values.count("min_fit_bytes"));
      if (fit && !m.oom_at_event && m.requested_peak > 0) {
        ReplayOptions probe = bases[t];
        probe.policy_spec = policies[p];
        min_fit = scan_min_capacity(probe).smallest_fit_bytes;
      }
      const CaseInput input{traces[t].name, policies[p], metric_values(m, min_fit), oom_point(m)};
      cases.push_back(evaluate_case(input, entry, baseline_in_use, tolerances, limits, allow));
    }
  }
  return cases;
}

BaselineUpdate plan_update(const std::vector<CheckCase>& cases, const Baseline& old,
                           const std::map<std::string, double>& tolerances, bool accept) {
  BaselineUpdate u;
  for (const auto& c : cases) {
    const BaselineEntry* entry = old.find(c.trace, c.policy);
    EntryChange change{c.trace, c.policy, entry == nullptr, {}};
    for (const auto& metric : check_metrics()) {
      const auto now = c.values.find(std::string(metric.name));
      if (now == c.values.end()) continue;
      MetricChange m{now->first, std::nullopt, now->second, tolerance_of(metric, tolerances), false};
      if (entry && entry->values.count(now->first)) {
        const double before = entry->values.at(now->first);
        if (before == now->second) continue;
        m.before = before;
        const double band = metric.absolute_tolerance ? m.tolerance : std::abs(before) * m.tolerance;
        m.beyond_tolerance = std::abs(now->second - before) > band + 1e-12 * std::max(1.0, std::abs(before));
      }
      change.metrics.push_back(m);
    }
    if (change.added || !change.metrics.empty()) u.changes.push_back(std::move(change));
  }
  // A change against the old baseline is what --accept is for; a limit, an OOM or an empty trace
  // is not: a baseline records a run that passed.
  const auto fails_beyond_baseline = [](const CheckCase& c) {
    return c.oom || std::any_of(c.findings.begin(), c.findings.end(),
                                [](const Finding& f) { return f.regression && f.source != "baseline"; });
  };
  const size_t failed = std::count_if(cases.begin(), cases.end(), fails_beyond_baseline);
  size_t beyond = 0;
  for (const auto& e : u.changes)
    beyond +=
        std::count_if(e.metrics.begin(), e.metrics.end(), [](const MetricChange& m) { return m.beyond_tolerance; });
  if (failed != 0)
    u.refused = std::to_string(failed) + " case(s) failed their limits: a baseline records a run that passed";
  else if (beyond != 0 && !accept)
    u.refused = std::to_string(beyond) + " change(s) beyond their tolerance (--accept to record them)";
  return u;
}

// The updated baseline's text, read back before it is written: what check writes, check reads.
std::string updated_baseline_text(const Baseline& old, const CheckResult& result, const std::string& path) {
  Baseline updated = old;
  updated.capacity = result.capacity;
  updated.tolerances = result.tolerances;
  for (const auto& c : result.cases) updated.put({c.trace, c.policy, c.values});
  const std::string text = baseline_text(updated);
  if (text.size() > kMaxBaselineBytes)
    throw InputError(path + ": the updated baseline would be " + format_bytes(text.size()) + ", over the " +
                     format_bytes(kMaxBaselineBytes) + " a baseline may hold");
  parse_baseline(text, path);
  return text;
}

void write_reports(const CheckOutputs& out, const CheckResult& result) {
  if (!out.junit.empty()) write_output_file(out.junit, junit_xml(result));
  if (!out.markdown.empty()) write_output_file(out.markdown, markdown_summary(result));
  if (!out.json.empty()) write_output_file(out.json, to_json(result).dump(2) + "\n");
}

CheckResult run(const CheckRequest& r) {
  const auto start = std::chrono::steady_clock::now();
  check_request(r);
  const auto traces = name_traces(r.traces);
  const auto policies = expand_policy_specs(r.policies);
  for (const auto& spec : policies)
    if (const auto problem = name_problem(spec)) throw InputError("--policy " + in_quotes(spec) + ": " + *problem);
  for (const auto& t : traces) check_readable(t, r.allow_incomplete);

  // An update holds the baseline from before it reads it until after it writes it.
  std::unique_ptr<BaselineLock> lock;
  if (r.update_baseline) lock = std::make_unique<BaselineLock>(r.baseline);
  Baseline baseline;
  const bool baseline_exists = !r.baseline.empty() && fs::symlink_status(r.baseline).type() != fs::file_type::not_found;
  if (!r.baseline.empty() && (baseline_exists || !r.update_baseline)) baseline = load_baseline(r.baseline);
  if (baseline_exists && baseline.capacity != r.capacity)
    throw InputError(r.baseline + ": the baseline was made " + capacity_text(baseline.capacity) + ", this check runs " +
                     capacity_text(r.capacity) + " (the numbers would not compare" +
                     (r.update_baseline ? "; write the new ones to another file)" : ")"));

  CheckResult result;
  result.capacity = r.capacity;
  result.tolerances = effective_tolerances(baseline, r);
  result.cases = evaluate_all(r, traces, policies, baseline, !r.baseline.empty(), result.tolerances, result.warnings);
  std::string new_baseline;
  if (r.update_baseline) {
    result.update = plan_update(result.cases, baseline, result.tolerances, r.allow.accept);
    if (!result.update->refused) new_baseline = updated_baseline_text(baseline, result, r.baseline);
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  write_reports(r.outputs, result);
  if (!new_baseline.empty()) {
    write_output_file(r.baseline, new_baseline);
    result.update->written = true;
  }
  return result;
}

}  // namespace

size_t CheckResult::failed_cases() const {
  return std::count_if(cases.begin(), cases.end(), [](const CheckCase& c) { return c.failed(); });
}

bool CheckResult::passed() const { return failed_cases() == 0 && !(update && update->refused); }

std::pair<std::string, double> parse_tolerance(const std::string& spec) {
  const auto eq = spec.find('=');
  if (eq == std::string::npos)
    throw InputError("--tolerance " + in_quotes(spec) + ": expected METRIC=VALUE, e.g. reserved_peak=2%");
  const std::string name = spec.substr(0, eq);
  check_metric(name);
  std::string value = spec.substr(eq + 1);
  const bool percent = !value.empty() && value.back() == '%';
  if (percent) value.pop_back();
  double number = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), number);
  if (value.empty() || error != std::errc() || end != value.data() + value.size())
    throw InputError("--tolerance " + in_quotes(spec) + ": expected a number or a percentage, e.g. 0.02 or 2%");
  if (percent) number /= 100;
  if (const auto problem = tolerance_problem(number))
    throw InputError("--tolerance " + in_quotes(spec) + ": " + *problem);
  return {name, number};
}

CheckResult run_check(const CheckRequest& request) {
  try {
    return run(request);
  } catch (const InputError& e) {
    write_check_error_reports(request, e.what());
    throw;
  }
}

void write_check_error_reports(const CheckRequest& request, const std::string& message) {
  std::set<std::string> inputs;
  for (const auto& t : request.traces) inputs.insert(same_file_key(t.path));
  if (!request.baseline.empty()) inputs.insert(same_file_key(request.baseline));
  std::set<std::string> written;
  const auto write = [&](const std::string& path, const std::string& text) {
    if (path.empty() || inputs.count(same_file_key(path)) || !written.insert(same_file_key(path)).second) return;
    try {
      write_output_file(path, text);
    } catch (const InputError&) {
      // The error being reported is the one that matters; this file stays as it was.
    }
  };
  write(request.outputs.junit, junit_error_xml(message));
  write(request.outputs.markdown, markdown_error(message));
  write(request.outputs.json, check_error_json(message).dump(2) + "\n");
}

}  // namespace memreplay::results
