// memreplay compare TRACE --policy A --policy B ...: the same trace through several policies.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "policies/registry.h"
#include "proto/schema_versions.h"
#include "replayer/replay_runner.h"
#include "results/metrics_table.h"
#include "results/recommendation.h"
#include "tools/cli/command.h"
#include "tools/cli/commands.h"
#include "tools/cli/replay_flags.h"
#include "tools/cli/text_format.h"

namespace memreplay::cli {
namespace {

constexpr const char* kHelp =
    "Replay one trace against several policies side by side: one table, one JSON. The star weighs both costs: the "
    "lowest reserved peak among the policies that did not run out of memory and make at most --max-call-ratio "
    "times the device calls of the current setting (the first --policy; pytorch for `all`); the rule is printed "
    "under the table.\n"
    "  memreplay compare run.mrt --policy pytorch --policy pytorch:expandable_segments:True "
    "--policy pytorch:max_split_size_mb:64\n"
    "  memreplay compare run.mrt --policy all    # every registered policy";

struct CompareOptions {
  ReplayOptions replay;  // policy_spec: each of `policies` in turn
  std::vector<std::string> policies;
  std::string json;
  bool wide = false;
  double max_call_ratio = results::kDefaultMaxCallRatio;
};

// The current setting the star's call rule starts from: the first policy given, pytorch for `all`.
std::string current_setting(const std::vector<std::string>& asked) {
  return asked.empty() || asked.front() == "all" ? "pytorch" : asked.front();
}

const char* standing_name(results::Standing s) {
  switch (s) {
    case results::Standing::qualifies: return "qualifies";
    case results::Standing::ran_out_of_memory: return "ran_out_of_memory";
    case results::Standing::too_many_calls: return "too_many_calls";
  }
  return "";
}

// No --policy, or `--policy all`: every registered policy with its default options (plugins
// loaded with --plugin included), in the registry's order.
std::vector<std::string> expand_policies(const std::vector<std::string>& asked) {
  std::vector<std::string> specs;
  for (const auto& spec : asked.empty() ? std::vector<std::string>{"all"} : asked) {
    if (spec != "all") {
      specs.push_back(spec);
      continue;
    }
    for (const PolicyInfo& info : PolicyRegistry::instance().policies()) specs.push_back(info.name);
  }
  return specs;
}

void compare(const CompareOptions& options) {
  std::vector<ReplayMetrics> rows;
  const std::vector<std::string> specs = expand_policies(options.policies);
  for (const auto& spec : specs) {
    if (stderr_is_terminal()) std::cerr << "replaying with " << spec << "...\n";
    ReplayOptions replay = options.replay;
    replay.policy_spec = spec;
    warn_before_replay(replay);
    rows.push_back(run_replay(replay));
    if (rows.size() == 1) warn_after_replay(replay, rows.back());
  }
  if (const auto warning = incomplete_warning(options.replay.trace_path, rows.front()))
    std::cerr << "memreplay: warning: " << *warning << "\n";
  // The current setting's row (for `all`: pytorch's), the reference of the call rule.
  const std::string current = current_setting(options.policies);
  size_t current_row = 0;
  while (current_row + 1 < rows.size() && specs[current_row] != current) ++current_row;
  const results::CallRule rule =
      results::call_rule_for(options.replay, specs[current_row], rows[current_row], options.max_call_ratio);
  const results::Recommendation recommendation = results::recommend(rows, rule);
  if (options.json != "-") {
    std::fputs(results::metrics_table_text(rows, {.wide = options.wide, .recommendation = &recommendation}).c_str(),
               stdout);
    for (const auto& m : rows) print_latency_table(m);
  }
  nlohmann::json all = nlohmann::json::array();
  for (size_t i = 0; i < rows.size(); ++i) {
    nlohmann::json row = to_json(rows[i]);
    row["reserved_over_requested"] =
        rows[i].requested_peak == 0 ? 1.0 : double(rows[i].reserved_peak) / double(rows[i].requested_peak);
    row["failed"] = rows[i].oom_at_event.has_value();
    row["standing"] = standing_name(recommendation.standing[i]);
    all.push_back(std::move(row));
  }
  const ReplayOptions& r = options.replay;
  const nlohmann::json document = {
      {"schema", "memreplay-compare"},
      {"schema_version", schema::kCompare},
      {"metrics_schema_version", schema::kMetrics},
      {"trace", r.trace_path},
      {"capacity", r.capacity ? nlohmann::json(*r.capacity) : nlohmann::json(nullptr)},
      {"options",
       {{"device", r.device_spec},
        {"trace_device", r.trace_device},
        {"lenient", r.lenient},
        {"keep_going", r.continue_after_oom},
        {"time_operations", r.time_operations}}},
      {"recommended", recommendation.best ? nlohmann::json(specs[*recommendation.best]) : nlohmann::json(nullptr)},
      {"call_rule", results::to_json(rule)},
      {"definitions",
       {{"reserved_over_requested", "reserved_peak / requested_peak"},
        {"fragmentation_at_peak",
         "1 - allocated/reserved at the peak: of the moments reserved stands at its peak, the first with the most "
         "allocated (peak_trace_event)"},
        {"fragmentation_at_peak_max", "1 - allocated/reserved at the peak's least-used moment"},
        {"free_fragmentation_at_peak", "1 - largest free range / all free bytes at that moment"},
        {"device_calls", kDeviceCallsDefinition},
        {"complete", results::kCompleteDefinition},
        {"failed", "the replay ran out of memory: without keep_going its numbers stop at oom_at_event"},
        {"standing",
         "qualifies for the star, or why not: ran_out_of_memory, too_many_calls (over call_rule.call_limit)"}}},
      {"results", all}};
  if (!options.json.empty()) write_json(document, options.json);
}

}  // namespace

void add_compare_command(CLI::App& app) {
  auto [command, options] = add_command<CompareOptions>(app, "compare", kHelp, compare);
  add_policy_list_flags(command, options.replay, options.policies,
                        "a policy spec; repeat for each policy; `all` (or no --policy) for every registered policy",
                        options.json, "all metrics");
  command.add_flag("--wide", options.wide, "every column: allocated and requested peaks, each kind of device call");
  add_max_call_ratio_flag(command, options.max_call_ratio, "the current setting's");
}

}  // namespace memreplay::cli
