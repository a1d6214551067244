// memreplay compare TRACE --policy A --policy B ...: the same trace through several policies.
#include <iostream>
#include <nlohmann/json.hpp>

#include "replayer/replay_runner.h"
#include "results/compare.h"
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

void compare(const CompareOptions& options) {
  std::vector<ReplayMetrics> rows;
  for (const auto& spec : results::compare_policy_specs(options.policies)) {
    if (stderr_is_terminal()) std::cerr << "replaying with " << spec << "...\n";
    ReplayOptions replay = options.replay;
    replay.policy_spec = spec;
    warn_before_replay(replay);
    rows.push_back(run_replay(replay));
    if (rows.size() == 1) warn_after_replay(replay, rows.back());
  }
  if (const auto warning = incomplete_warning(options.replay.trace_path, rows.front()))
    std::cerr << "memreplay: warning: " << *warning << "\n";
  if (options.json != "-") {
    print_metrics_table(rows);
    for (const auto& m : rows) print_latency_table(m);
  }
  if (!options.json.empty()) write_json(results::compare_json(options.replay, rows), options.json);
}

}  // namespace

void add_compare_command(CLI::App& app) {
  auto [command, options] = add_command<CompareOptions>(app, "compare", kHelp, compare);
  add_policy_list_flags(command, options.replay, options.policies,
                        "a policy spec; repeat for each policy; `all` (or no --policy) for every registered policy",
                        options.json, "all metrics");
}

}  // namespace memreplay::cli
