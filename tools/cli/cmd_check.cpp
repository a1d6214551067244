// memreplay check TRACE... --policy SPEC... --baseline FILE: the CI gate. Exit 0 when every
// trace × policy is within its limits, 1 on a regression (each printed with its metric, baseline,
// new value and limit), 2 on bad input. See results/check.h for the rules.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "base/units.h"
#include "proto/input_error.h"
#include "proto/trace_reader.h"
#include "results/check.h"
#include "results/fit_scan.h"
#include "results/replay_batch.h"
#include "tools/cli/command.h"
#include "tools/cli/commands.h"
#include "tools/cli/replay_flags.h"
#include "tools/cli/text_format.h"

namespace memreplay::cli {
namespace {

constexpr const char* kHelp =
    "Check traces against a committed baseline and plain limits, for CI. Exit 0: every trace × policy within "
    "its limits; 1: a regression (each printed: metric, baseline, new value, limit); 2: bad input.\n"
    "  memreplay check runs/*.mrt --policy pytorch --policy pytorch:expandable_segments:True --update-baseline "
    "--baseline memory-baseline.json\n"
    "  memreplay check runs/*.mrt --policy pytorch --baseline memory-baseline.json --junit check.xml --markdown "
    "check.md\n"
    "  memreplay check run.mrt --policy pytorch --capacity 40GiB --max-overhead 1.10\n"
    "Metrics (--tolerance NAME=VALUE, VALUE a fraction or a percentage: reserved_peak=2%): reserved_peak, "
    "overhead, unallocated_at_peak, free_fragmentation_at_peak (tolerances there are points: 0.02), "
    "device_calls, oom, min_fit_bytes (with --fit).";

struct CheckOptions {
  std::vector<std::string> traces;
  std::vector<std::string> policies;
  std::string baseline;
  bool update_baseline = false;
  std::vector<std::string> tolerances;
  std::string max_reserved;
  double max_overhead = 0;
  std::string capacity;
  bool fit = false;
  bool allow_incomplete = false;
  std::string device = "sim";
  uint32_t trace_device = 0;
  bool lenient = false;
  std::string junit, markdown, json;
};

std::map<std::string, double> parse_tolerances(const std::vector<std::string>& specs) {
  std::map<std::string, double> out;
  for (const auto& spec : specs) {
    const auto eq = spec.find('=');
    if (eq == std::string::npos)
      throw InputError("--tolerance " + spec + ": expected METRIC=VALUE, e.g. reserved_peak=2%");
    const std::string name = spec.substr(0, eq);
    results::check_metric(name);
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

void check(const CheckOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const auto tolerance_overrides = parse_tolerances(options.tolerances);
  results::Limits limits;
  if (!options.max_reserved.empty()) limits.max_reserved = parse_bytes(options.max_reserved, "--max-reserved");
  if (options.max_overhead != 0) {
    if (options.max_overhead < 1) throw InputError("--max-overhead: a ratio of reserved to requested peak, >= 1");
    limits.max_overhead = options.max_overhead;
  }
  std::optional<uint64_t> capacity;
  if (!options.capacity.empty()) capacity = parse_bytes(options.capacity, "--capacity"), limits.must_fit = true;
  if (options.update_baseline && options.baseline.empty()) throw InputError("--update-baseline needs --baseline FILE");
  if (options.baseline.empty() && !limits.max_reserved && !limits.max_overhead && !limits.must_fit)
    throw InputError(
        "nothing to check against: give --baseline FILE or a limit (--max-reserved, --max-overhead, "
        "--capacity)");

  results::Baseline baseline;
  const bool compare_to_baseline = !options.baseline.empty() && !options.update_baseline;
  if (!options.baseline.empty() && (compare_to_baseline || std::filesystem::exists(options.baseline)))
    baseline = results::load_baseline(options.baseline);
  if (compare_to_baseline && baseline.capacity != capacity)
    throw InputError(
        options.baseline + ": the baseline was made " +
        (baseline.capacity ? "with --capacity " + format_bytes(*baseline.capacity) : "without --capacity") +
        ", this check runs " + (capacity ? "with --capacity " + format_bytes(*capacity) : "without") +
        " (the numbers would not compare)");
  std::map<std::string, double> tolerances = baseline.tolerances;
  for (const auto& [k, v] : tolerance_overrides) tolerances[k] = v;

  // Everything that can be refused is refused before the first replay.
  std::set<std::string> names;
  std::vector<std::string> trace_names;
  for (const auto& path : options.traces) {
    const std::string name = results::trace_name(path);
    if (!names.insert(name).second)
      throw InputError(path + ": another trace of this check has the name '" + name + "' (baselines key by name)");
    trace_names.push_back(name);
    TraceReader reader(path);
    if (!reader.complete() && !options.allow_incomplete)
      throw InputError(path + ": the trace is incomplete (" + reader.truncation_note().value_or("no footer") +
                       "); its numbers would be partial (--allow-incomplete to check it anyway)");
    for (const auto& policy : options.policies) warn_torch_version(path, reader.header(), policy);
    if (compare_to_baseline)
      for (const auto& policy : options.policies)
        if (!baseline.find(name, policy))
          throw InputError(options.baseline + ": no entry for trace '" + name + "' with policy '" + policy +
                           "' (run check --update-baseline to add it)");
  }

  std::vector<results::CheckCase> cases;
  std::vector<results::BaselineEntry> fresh;
  std::vector<ReplayOptions> bases;
  for (const auto& path : options.traces) {
    ReplayOptions base;
    base.trace_path = path;
    base.device_spec = options.device;
    base.capacity = capacity;
    base.trace_device = options.trace_device;
    base.lenient = options.lenient;
    bases.push_back(base);
  }
  // One pass over each trace for all policies; traces in parallel (a real GPU: one at a time).
  const auto all_replays = results::replay_traces(bases, options.policies, options.device == "sim" ? 0 : 1);
  for (size_t t = 0; t < options.traces.size(); ++t) {
    const ReplayOptions& base = bases[t];
    const auto& replays = all_replays[t];
    if (!replays.metrics.empty())
      if (const auto skipped = skipped_warning(base.trace_path, replays.metrics.front())) warn(*skipped);
    for (size_t p = 0; p < options.policies.size(); ++p) {
      const std::string& policy = options.policies[p];
      const results::BaselineEntry* entry = compare_to_baseline ? baseline.find(trace_names[t], policy) : nullptr;
      std::optional<uint64_t> min_fit;
      if (options.fit || (entry && entry->values.count("min_fit_bytes"))) {
        ReplayOptions probe = base;
        probe.policy_spec = policy;
        min_fit = results::scan_min_capacity(probe, 1 << 20, 16).smallest_fit_bytes;
      }
      const auto values = results::metric_values(replays.metrics[p], min_fit);
      cases.push_back(results::evaluate_case(trace_names[t], policy, values, entry, tolerances, limits));
      fresh.push_back({trace_names[t], policy, values});
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  size_t failures = 0;
  for (const auto& c : cases) {
    failures += c.failed();
    for (const auto& f : c.findings)
      if (f.regression) std::fprintf(stderr, "REGRESSION %s\n", results::describe_finding(c, f).c_str());
  }
  if (options.json != "-")
    std::printf("memreplay check: %zu of %zu trace × policy cases within their limits (%.2f s)%s\n",
                cases.size() - failures, cases.size(), seconds, options.update_baseline ? "; baseline updated" : "");
  if (options.update_baseline) {
    results::Baseline updated = baseline;
    updated.capacity = capacity;
    updated.tolerances = tolerances;
    for (const auto& e : fresh) {
      auto it = std::find_if(updated.entries.begin(), updated.entries.end(),
                             [&](const auto& old) { return old.trace == e.trace && old.policy == e.policy; });
      if (it != updated.entries.end())
        *it = e;
      else
        updated.entries.push_back(e);
    }
    results::save_baseline(updated, options.baseline);
  }
  if (!options.junit.empty()) write_file_atomically(options.junit, results::junit_xml(cases, seconds));
  if (!options.markdown.empty()) write_file_atomically(options.markdown, results::markdown_summary(cases));
  if (!options.json.empty()) write_json(results::check_result_json(cases, tolerances, capacity), options.json);
  // An update records the new numbers: it passes unless a plain limit fails.
  if (failures != 0) command_exit_status = 1;
}

}  // namespace

void add_check_command(CLI::App& app) {
  auto [command, options] = add_command<CheckOptions>(app, "check", kHelp, check);
  command.add_option("TRACE", options.traces, "trace files (.mrt); each is named by its file name without .mrt")
      ->required()
      ->check(CLI::ExistingFile);
  command.add_option("--policy", options.policies, "a policy spec; repeat for each policy")->required();
  command.add_option("--baseline", options.baseline, "the committed baseline (JSON) to compare with");
  command.add_flag("--update-baseline", options.update_baseline,
                   "write (or update) the baseline from these replays instead of failing on changes");
  command.add_option("--tolerance", options.tolerances, "METRIC=VALUE, e.g. reserved_peak=2% (repeatable)");
  command.add_option("--max-reserved", options.max_reserved, "fail when the reserved peak exceeds BYTES (e.g. 8GiB)");
  command.add_option("--max-overhead", options.max_overhead,
                     "fail when reserved peak ÷ requested peak exceeds RATIO (e.g. 1.10)");
  command.add_option("--capacity", options.capacity, "replay under this per-process cap; an OOM fails (e.g. 40GiB)");
  command.add_flag("--fit", options.fit, "also find the smallest capacity that fits (about 30 replays each)");
  command.add_flag("--allow-incomplete", options.allow_incomplete, "check a trace that has no footer (cut off)");
  command.add_option("--device", options.device, "sim (default) or cuda[:N]");
  command.add_option("--trace-device", options.trace_device, "which recorded device's events to replay (default 0)");
  command.add_flag("--lenient", options.lenient, "count and skip events inconsistent with the live state");
  command.add_option("--junit", options.junit, "write a JUnit XML report to FILE");
  command.add_option("--markdown", options.markdown, "write a Markdown summary (for a pull-request comment) to FILE");
  add_json_option(command, options.json, "every case with its findings");
}

}  // namespace memreplay::cli
