// memreplay compare TRACE --policy A --policy B ...: the same trace through several policies.
#include <iostream>
#include <nlohmann/json.hpp>

#include "policies/registry.h"
#include "proto/schema_versions.h"
#include "replayer/replay_runner.h"
#include "tools/cli/command.h"
#include "tools/cli/commands.h"
#include "tools/cli/replay_flags.h"
#include "tools/cli/text_format.h"

namespace memreplay::cli {
namespace {

constexpr const char* kHelp =
    "Replay one trace against several policies side by side: one table, one JSON. The table leads with reserved "
    "peak ÷ requested peak (the waste over the floor no allocator can beat); replays that ran out of memory are "
    "marked and never starred as the best.\n"
    "  memreplay compare run.mrt --policy pytorch --policy pytorch:expandable_segments:True "
    "--policy pytorch:max_split_size_mb:64\n"
    "  memreplay compare run.mrt --policy all    # every registered policy";

struct CompareOptions {
  ReplayOptions replay;  // policy_spec: each of `policies` in turn
  std::vector<std::string> policies;
  std::string json;
};

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
  nlohmann::json all = nlohmann::json::array();
  for (const auto& spec : expand_policies(options.policies)) {
    if (stderr_is_terminal()) std::cerr << "replaying with " << spec << "...\n";
    ReplayOptions replay = options.replay;
    replay.policy_spec = spec;
    warn_before_replay(replay);
    rows.push_back(run_replay(replay));
    if (rows.size() == 1) warn_after_replay(replay, rows.back());
    nlohmann::json row = to_json(rows.back());
    row["reserved_over_requested"] =
        rows.back().requested_peak == 0 ? 1.0 : double(rows.back().reserved_peak) / double(rows.back().requested_peak);
    row["failed"] = rows.back().oom_at_event.has_value();
    all.push_back(std::move(row));
  }
  if (const auto warning = incomplete_warning(options.replay.trace_path, rows.front()))
    std::cerr << "memreplay: warning: " << *warning << "\n";
  if (options.json != "-") {
    print_metrics_table(rows);
    for (const auto& m : rows) print_latency_table(m);
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
      {"definitions",
       {{"reserved_over_requested", "reserved_peak / requested_peak"},
        {"fragmentation_at_peak", "1 - allocated/reserved at the moment reserved peaked"},
        {"free_fragmentation_at_peak", "1 - largest free range / all free bytes at that moment"},
        {"failed", "the replay ran out of memory: its numbers stop at oom_at_event"}}},
      {"results", all}};
  if (!options.json.empty()) write_json(document, options.json);
}

}  // namespace

void add_compare_command(CLI::App& app) {
  auto [command, options] = add_command<CompareOptions>(app, "compare", kHelp, compare);
  add_policy_list_flags(command, options.replay, options.policies,
                        "a policy spec; repeat for each policy; `all` (or no --policy) for every registered policy",
                        options.json, "all metrics");
}

}  // namespace memreplay::cli
