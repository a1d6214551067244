// memreplay compare TRACE --policy A --policy B ...: the same trace through several policies.
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "tools/cli/commands.h"
#include "tools/cli/replay_options.h"
#include "tools/cli/text_format.h"

namespace memreplay::cli {

void add_compare_command(CLI::App& app) {
  struct Options {
    CommonReplayOptions common;
    std::vector<std::string> policies;
    std::string json;
  };
  auto options = std::make_shared<Options>();
  auto* command = app.add_subcommand(
      "compare",
      "Replay one trace against several policies side by side: one table, one JSON.\n"
      "  memreplay compare run.mrt --policy pytorch --policy pytorch:expandable_segments:True "
      "--policy pytorch:max_split_size_mb:64");
  options->common.add_to(*command);
  command->add_option("--policy", options->policies, "a policy spec; repeat for each policy")->required();
  command->add_option("--json", options->json, "write all metrics as JSON to FILE (- for stdout)");
  command->callback([options] {
    std::vector<ReplayMetrics> rows;
    nlohmann::json all = nlohmann::json::array();
    for (const auto& spec : options->policies) {
      if (stderr_is_terminal()) std::cerr << "replaying with " << spec << "...\n";
      rows.push_back(run_replay(options->common.request_for(spec)));
      all.push_back(to_json(rows.back()));
    }
    if (options->json != "-") {
      print_metrics_table(rows);
      for (const auto& m : rows) print_latency_table(m);
    }
    if (!options->json.empty())
      write_json({{"trace", options->common.trace}, {"results", all}}, options->json);
  });
}

}  // namespace memreplay::cli
