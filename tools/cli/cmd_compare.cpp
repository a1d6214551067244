// memreplay compare TRACE --policy A --policy B ...: the same trace through several policies.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "replayer/replay_runner.h"
#include "results/compare.h"
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

void compare(CompareOptions options) {
  options.replay = with_recorded_capacity(options.replay);
  std::vector<ReplayMetrics> rows;
  const std::vector<std::string> specs = results::compare_policy_specs(options.policies);
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
  // The current setting's row (for `all`: pytorch's) is the reference of the call rule.
  const results::Recommendation recommendation =
      results::compare_recommendation(options.replay, options.policies, specs, rows, options.max_call_ratio);
  if (options.json != "-") {
    std::fputs(results::metrics_table_text(rows, {.wide = options.wide, .recommendation = &recommendation}).c_str(),
               stdout);
    for (const auto& m : rows) print_latency_table(m);
  }
  if (!options.json.empty())
    write_json(results::compare_json(options.replay, specs, rows, recommendation), options.json);
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
