// memreplay check TRACE... --policy SPEC... --baseline FILE: the CI gate. Exit 0 when every
// trace × policy is within its limits, 1 on a failure (a regression, a new case, an OOM, an empty
// or shrunken trace, a refused baseline update; each printed), 2 on bad input. The rules and the
// run are results/check.h and results/check_run.h; here the flags and the printing.
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/text_escape.h"
#include "base/units.h"
#include "proto/input_error.h"
#include "results/check_run.h"
#include "tools/cli/command.h"
#include "tools/cli/commands.h"
#include "tools/cli/replay_flags.h"
#include "tools/cli/text_format.h"

namespace memreplay::cli {
namespace {

constexpr const char* kHelp =
    "Check traces against a committed baseline and plain limits, for CI. Exit 0: every trace × policy within "
    "its limits; 1: a failure (a regression, a case new to the baseline, an OOM, a trace that requested nothing "
    "or shrank, a refused baseline update: each printed with its metric, baseline, new value and limit); 2: bad "
    "input. JUnit, Markdown and JSON are written on every exit.\n"
    "  memreplay check runs/*.mrt --policy pytorch --policy pytorch:expandable_segments:True --update-baseline "
    "--baseline memory-baseline.json\n"
    "  memreplay check gpt2=nightly/gpt2-2026-12-01.mrt --policy all --baseline memory-baseline.json --junit "
    "check.xml --markdown check.md\n"
    "  memreplay check run.mrt --policy pytorch --capacity 40GiB --max-overhead 1.10\n"
    "Metrics (--tolerance NAME=VALUE, VALUE a fraction or a percentage: reserved_peak=2%): requested_peak and "
    "events (a fall fails), reserved_peak, overhead, unallocated_at_peak, free_fragmentation_at_peak (tolerances "
    "there are points: 0.02), device_calls, oom, min_fit_bytes (with --fit).";

struct CheckOptions {
  std::vector<std::string> traces;
  std::vector<std::string> names;
  std::vector<std::string> policies;
  std::string baseline;
  bool update_baseline = false;
  bool accept = false;
  std::vector<std::string> tolerances;
  std::string max_reserved;
  std::string max_overhead;
  std::string capacity;
  bool fit = false;
  bool allow_incomplete = false, allow_new = false, allow_shrink = false, allow_empty = false;
  std::string device = "sim";
  uint32_t trace_device = 0;
  bool lenient = false;
  std::string junit, markdown, json;
};

// TRACE is PATH, or NAME=PATH when PATH names a file and the whole argument does not.
results::TraceInput trace_argument(const std::string& argument) {
  const auto eq = argument.find('=');
  if (eq != std::string::npos && eq > 0 && !std::filesystem::exists(argument) &&
      std::filesystem::exists(argument.substr(eq + 1)))
    return {argument.substr(eq + 1), argument.substr(0, eq)};
  if (!std::filesystem::exists(argument)) throw InputError(argument + ": no such trace file");
  return {argument, std::nullopt};
}

double parse_ratio(const std::string& text, const std::string& option) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size()) throw InputError(option + " '" + text + "': expected a number, e.g. 1.10");
  return value;
}

// Only what binds flags here; every rule is checked by run_check.
results::CheckRequest request_from(const CheckOptions& o) {
  results::CheckRequest r;
  r.outputs = {o.junit, o.markdown, o.json == "-" ? "" : o.json};
  r.baseline = o.baseline;
  r.update_baseline = o.update_baseline;
  r.policies = o.policies;
  if (!o.capacity.empty()) r.capacity = parse_bytes(o.capacity, "--capacity");
  for (const auto& t : o.traces) {
    r.traces.push_back(trace_argument(t));
    // A snapshot is imported (under --capacity); every trace kept from the outputs.
    open_trace_input(r.traces.back().path, r.capacity);
  }
  if (!o.names.empty()) {
    if (o.names.size() != o.traces.size())
      throw InputError("--name: " + std::to_string(o.names.size()) + " given for " + std::to_string(o.traces.size()) +
                       " traces (one per TRACE, in order; or NAME=PATH)");
    for (size_t i = 0; i < o.names.size(); ++i) {
      if (r.traces[i].name) throw InputError(o.traces[i] + ": named twice (NAME=PATH and --name)");
      r.traces[i].name = o.names[i];
    }
  }
  for (const auto& spec : o.tolerances) r.tolerances.insert(results::parse_tolerance(spec));
  if (!o.max_reserved.empty()) r.max_reserved = parse_bytes(o.max_reserved, "--max-reserved");
  if (!o.max_overhead.empty()) r.max_overhead = parse_ratio(o.max_overhead, "--max-overhead");
  r.allow = {o.allow_new, o.allow_shrink, o.allow_empty, o.accept};
  r.fit = o.fit;
  r.allow_incomplete = o.allow_incomplete;
  r.device = o.device;
  r.trace_device = o.trace_device;
  r.lenient = o.lenient;
  return r;
}

// What the error reports need when the command line itself is bad: where to write them, and every
// path that may be an input, not to write over.
results::CheckRequest request_for_reports(const CheckOptions& o) {
  results::CheckRequest r;
  r.outputs = {o.junit, o.markdown, o.json == "-" ? "" : o.json};
  r.baseline = o.baseline;
  for (const auto& t : o.traces) {
    r.traces.push_back({t, std::nullopt});
    if (const auto eq = t.find('='); eq != std::string::npos) r.traces.push_back({t.substr(eq + 1), std::nullopt});
  }
  return r;
}

void print_result(const results::CheckResult& result, bool json_to_stdout) {
  for (const auto& w : result.warnings) warn(terminal_safe(w));
  for (const auto& c : result.cases) {
    if (c.is_new && !c.new_allowed)
      std::fprintf(stderr, "NEW %s %s: no baseline entry (--allow-new to pass it, --update-baseline to add it)\n",
                   terminal_safe(c.trace).c_str(), terminal_safe(c.policy).c_str());
    else if (c.is_new && !result.update && !json_to_stdout)
      std::printf("NEW %s %s: no baseline entry (allowed by --allow-new)\n", terminal_safe(c.trace).c_str(),
                  terminal_safe(c.policy).c_str());
    for (const auto& f : c.findings)
      if (f.regression) std::fprintf(stderr, "REGRESSION %s\n", terminal_safe(results::describe_finding(c, f)).c_str());
  }
  if (json_to_stdout) return;
  if (result.update)
    for (const auto& e : result.update->changes) {
      if (e.added) std::printf("ADDED %s %s\n", e.trace.c_str(), e.policy.c_str());
      for (const auto& m : e.metrics)
        if (!e.added) std::printf("CHANGED %s\n", results::describe_change(e, m).c_str());
    }
  std::string update;
  if (result.update)
    update = result.update->written ? "; baseline updated" : "; baseline NOT updated: " + *result.update->refused;
  std::printf("memreplay check: %zu of %zu trace × policy cases within their limits (%.2f s)%s\n",
              result.cases.size() - result.failed_cases(), result.cases.size(), result.seconds, update.c_str());
}

void check(const CheckOptions& options) {
  results::CheckRequest request;
  try {
    request = request_from(options);
  } catch (const InputError& e) {
    results::write_check_error_reports(request_for_reports(options), e.what());
    throw;
  }
  for (const auto& trace : request.traces)
    for (const auto& policy : request.policies) warn_torch_version(trace.path, policy);
  const results::CheckResult result = results::run_check(request);
  print_result(result, options.json == "-");
  if (options.json == "-") write_json(results::to_json(result), "-");
  if (!result.passed()) command_exit_status = 1;
}

}  // namespace

void add_check_command(CLI::App& app) {
  auto [command, options] = add_command<CheckOptions>(app, "check", kHelp, check);
  command.add_option("TRACE", options.traces,
                     "trace files (.mrt), each keyed in the baseline by its file name without .mrt, or NAME=PATH");
  command.add_option("--name", options.names, "the baseline name of each TRACE, in order (dated nightly files)");
  command.add_option("--policy", options.policies, "a policy spec, or all (every registered policy); repeatable");
  add_plugin_option(command);
  command.add_option("--baseline", options.baseline, "the committed baseline (JSON) to compare with");
  command.add_flag("--update-baseline", options.update_baseline,
                   "write the baseline from these replays; refused for a change beyond a tolerance without --accept");
  command.add_flag("--accept", options.accept, "with --update-baseline: record changes beyond their tolerance");
  command.add_flag("--allow-new", options.allow_new, "pass a trace × policy the baseline has no entry for");
  command.add_flag("--allow-shrink", options.allow_shrink,
                   "pass a requested peak or event count below the baseline's (past its tolerance)");
  command.add_flag("--allow-empty", options.allow_empty, "pass a trace that requested no memory at all");
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
  command.add_option("--junit", options.junit, "write a JUnit XML report to FILE (on every exit)");
  command.add_option("--markdown", options.markdown, "write a Markdown summary (for a pull-request comment) to FILE");
  add_json_option(command, options.json, "every case with its findings and the baseline update");
  // A command line CLI11 refuses (an unknown flag) is bad input too: into the reports it goes.
  parse_error_reporters.push_back([&options = options, &command = command](const std::string& message) {
    if (command.parsed()) results::write_check_error_reports(request_for_reports(options), "check: " + message);
  });
}

}  // namespace memreplay::cli
