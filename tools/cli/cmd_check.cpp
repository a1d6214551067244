// memreplay check TRACE... --policy SPEC... --baseline FILE: the CI gate. Exit 0 when every
// trace × policy is within its limits, 1 on a regression (each printed with its metric, baseline,
// new value and limit), 2 on bad input. See results/check.h for the rules.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "results/check_run.h"
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

void check(const CheckOptions& options) {
  results::CheckRequest request;
  request.traces = options.traces;
  request.policies = options.policies;
  request.baseline = options.baseline;
  request.update_baseline = options.update_baseline;
  request.tolerances = results::parse_tolerances(options.tolerances);
  if (!options.max_reserved.empty()) request.limits.max_reserved = parse_bytes(options.max_reserved, "--max-reserved");
  if (options.max_overhead != 0) request.limits.max_overhead = options.max_overhead;
  if (!options.capacity.empty()) request.capacity = parse_bytes(options.capacity, "--capacity");
  request.fit = options.fit;
  request.allow_incomplete = options.allow_incomplete;
  request.device = options.device;
  request.trace_device = options.trace_device;
  request.lenient = options.lenient;
  request.warn = warn;  // each said once, before the first replay
  const results::CheckOutcome outcome = results::run_check(request);

  const size_t failures = outcome.failures();
  for (const auto& c : outcome.cases)
    for (const auto& f : c.findings)
      if (f.regression) std::fprintf(stderr, "REGRESSION %s\n", results::describe_finding(c, f).c_str());
  if (options.json != "-")
    std::printf("memreplay check: %zu of %zu trace × policy cases within their limits (%.2f s)%s\n",
                outcome.cases.size() - failures, outcome.cases.size(), outcome.seconds,
                options.update_baseline ? "; baseline updated" : "");
  if (!options.junit.empty()) write_file_atomically(options.junit, results::junit_xml(outcome.cases, outcome.seconds));
  if (!options.markdown.empty()) write_file_atomically(options.markdown, results::markdown_summary(outcome.cases));
  if (!options.json.empty())
    write_json(results::check_result_json(outcome.cases, outcome.tolerances, outcome.capacity), options.json);
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
