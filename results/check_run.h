// A whole `memreplay check`: the request (traces, policies, baseline, limits, flags, output
// files), the replays, every case's verdict, the baseline update, and the files written, in this
// order: nothing before everything is computed, then JUnit, Markdown and JSON, and the baseline
// last. What the CLI calls, and what a Python binding would.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "results/check.h"

namespace memreplay::results {

struct TraceInput {
  std::string path;
  std::optional<std::string> name;  // the baseline's key; default trace_name(path)
};

struct CheckOutputs {
  std::string junit;  // "" for none, for each
  std::string markdown;
  std::string json;  // a file; the caller prints to_json itself for stdout
};

struct CheckRequest {
  std::vector<TraceInput> traces;
  std::vector<std::string> policies;  // specs; "all": every registered policy (plugins included)
  std::string baseline;  // "" for none
  bool update_baseline = false;  // write the baseline from these replays (within its tolerances)
  std::map<std::string, double> tolerances;  // over the baseline's
  std::optional<uint64_t> max_reserved;
  std::optional<double> max_overhead;  // >= 1
  std::optional<uint64_t> capacity;  // replay under it; an OOM fails
  Allowances allow;
  bool fit = false;  // also find the smallest capacity that fits
  bool allow_incomplete = false;  // check a trace cut off before its footer
  std::string device = "sim";
  uint32_t trace_device = 0;
  bool lenient = false;
  CheckOutputs outputs;
};

// One metric of one entry that --update-baseline changes.
struct MetricChange {
  std::string metric;
  std::optional<double> before;  // none: the entry or the metric is new
  double after = 0;
  double tolerance = 0;
  bool beyond_tolerance = false;  // either way: needs --accept
};

struct EntryChange {
  std::string trace;
  std::string policy;
  bool added = false;
  std::vector<MetricChange> metrics;  // only those that changed
};

struct BaselineUpdate {
  std::vector<EntryChange> changes;  // entries added or changed
  std::optional<std::string> refused;  // why the baseline was not written
  bool written = false;
};

struct CheckResult {
  std::vector<CheckCase> cases;
  std::map<std::string, double> tolerances;  // in effect
  std::optional<uint64_t> capacity;
  double seconds = 0;
  std::optional<BaselineUpdate> update;  // with --update-baseline
  std::vector<std::string> warnings;  // one line each (events --lenient skipped, per trace)

  size_t failed_cases() const;
  // No case failed and no update was refused: exit status 0.
  bool passed() const;
};

// "METRIC=VALUE" (VALUE a fraction or a percentage: "reserved_peak=2%"). InputError naming the
// spec for an unknown metric, a value that is not a finite number >= 0.
std::pair<std::string, double> parse_tolerance(const std::string& spec);

// Runs the check and writes request.outputs. Throws InputError for bad input (after writing it,
// as one failing case, into the JUnit and Markdown files and the JSON).
CheckResult run_check(const CheckRequest& request);

// The reports of a check that could not run: one failing case naming `message`. Best effort
// (a file that cannot be written is left), and never onto a trace or the baseline.
void write_check_error_reports(const CheckRequest& request, const std::string& message);

nlohmann::json to_json(const CheckResult& result);
nlohmann::json check_error_json(const std::string& message);
std::string junit_xml(const CheckResult& result);
std::string junit_error_xml(const std::string& message);
std::string markdown_summary(const CheckResult& result);
std::string markdown_error(const std::string& message);
// "gpt2_train pytorch: reserved_peak 7.53 GiB -> 7.60 GiB (+0.9%)", and ", beyond its 1% tolerance".
std::string describe_change(const EntryChange& entry, const MetricChange& change);

}  // namespace memreplay::results
