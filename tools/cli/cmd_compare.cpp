// memreplay compare TRACE --policy A --policy B ...: the same trace through several policies.
#include <iostream>
#include <nlohmann/json.hpp>

#include "policies/registry.h"
#include "replayer/replay_runner.h"
#include "tools/cli/command.h"
#include "tools/cli/commands.h"
#include "tools/cli/replay_options.h"
#include "tools/cli/text_format.h"

namespace memreplay::cli {
namespace {

constexpr const char* kHelp =
    "Replay one trace against several policies side by side: one table, one JSON.\n"
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
    rows.push_back(run_replay(replay));
    all.push_back(to_json(rows.back()));
  }
  if (const auto warning = incomplete_warning(options.replay.trace_path, rows.front())) std::cerr << "memreplay: warning: " << *warning << "\n";
  if (options.json != "-") {
    print_metrics_table(rows);
    for (const auto& m : rows) print_latency_table(m);
  }
  if (!options.json.empty()) write_json({{"trace", options.replay.trace_path}, {"results", all}}, options.json);
}

}  // namespace

void add_compare_command(CLI::App& app) {
  auto [command, options] = add_command<CompareOptions>(app, "compare", kHelp, compare);
  add_replay_options(command, options.replay);
  command.add_option("--policy", options.policies,
                     "a policy spec; repeat for each policy; `all` (or no --policy) for every registered policy");
  add_json_option(command, options.json, "all metrics");
}

}  // namespace memreplay::cli
