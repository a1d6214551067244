// memreplay replay TRACE --policy SPEC: one replay, a table and optionally the metrics as JSON.
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "tools/cli/commands.h"
#include "tools/cli/replay_options.h"
#include "tools/cli/text_format.h"

namespace memreplay::cli {

void add_replay_command(CLI::App& app) {
  struct Options {
    CommonReplayOptions common;
    std::string policy = "pytorch";
    std::string json;
  };
  auto options = std::make_shared<Options>();
  auto* command = app.add_subcommand(
      "replay",
      "Replay a trace against one allocator policy and report reserved/allocated peaks, "
      "fragmentation, device calls and OOMs.\n"
      "  memreplay replay run.mrt --policy 'pytorch:expandable_segments:True' --capacity 80GiB --json out.json");
  options->common.add_to(*command);
  command->add_option("--policy", options->policy,
                      "NAME[:OPTIONS], options written as in PYTORCH_CUDA_ALLOC_CONF "
                      "(see `memreplay policies`)");
  command->add_option("--json", options->json, "write the metrics as JSON to FILE (- for stdout)");
  command->callback([options] {
    const ReplayMetrics m = run_replay(options->common.request_for(options->policy));
    if (options->json != "-") {
      print_metrics_table({m});
      print_latency_table(m);
    }
    if (m.oom_at_event && options->json != "-")
      std::printf("OOM at replay event %llu (trace event %llu): %s requested\n",
                  static_cast<unsigned long long>(*m.oom_at_event),
                  static_cast<unsigned long long>(*m.oom_trace_event), format_bytes(*m.oom_request_bytes).c_str());
    if (!options->json.empty()) write_json(to_json(m), options->json);
  });
}

}  // namespace memreplay::cli
