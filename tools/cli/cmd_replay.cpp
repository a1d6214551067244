// memreplay replay TRACE --policy SPEC: one replay, a table and optionally the metrics as JSON.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "base/units.h"
#include "replayer/replay_runner.h"
#include "results/metrics_table.h"
#include "tools/cli/command.h"
#include "tools/cli/commands.h"
#include "tools/cli/replay_flags.h"
#include "tools/cli/text_format.h"

namespace memreplay::cli {
namespace {

constexpr const char* kHelp =
    "Replay a trace against one allocator policy and report reserved/allocated peaks, "
    "fragmentation, device calls and OOMs. Exit 0 when it replays without running out of memory, 1 when it runs "
    "out (under --capacity or the device's memory; the numbers stop there unless --keep-going), 2 for bad input.\n"
    "  memreplay replay run.mrt --policy 'pytorch:expandable_segments:True' --capacity 80GiB --json out.json";

struct ReplayCommandOptions {
  ReplayOptions replay;
  std::string json;
  bool wide = false;
};

void replay(ReplayCommandOptions options) {
  options.replay = with_recorded_capacity(options.replay);
  warn_before_replay(options.replay);
  const ReplayMetrics m = run_replay(options.replay);
  warn_after_replay(options.replay, m);
  if (const auto warning = incomplete_warning(options.replay.trace_path, m))
    std::fprintf(stderr, "memreplay: warning: %s\n", warning->c_str());
  if (options.json != "-") {
    std::fputs(results::metrics_table_text({m}, {.wide = options.wide}).c_str(), stdout);
    print_latency_table(m);
  }
  if (m.oom_at_event && options.json != "-") {
    std::printf("OOM at replay event %llu (trace event %llu): %s requested\n",
                static_cast<unsigned long long>(*m.oom_at_event), static_cast<unsigned long long>(*m.oom_trace_event),
                format_bytes(*m.oom_request_bytes).c_str());
    if (options.replay.continue_after_oom)
      std::printf("%llu allocations failed in all (--keep-going replayed past each)\n",
                  static_cast<unsigned long long>(m.ooms));
  }
  if (!options.json.empty()) write_json(to_json(m), options.json);
  // A CI step that replays under --capacity fails when the job would not fit (as `fit --capacity`).
  if (m.oom_at_event) command_exit_status = 1;
}

}  // namespace

void add_replay_command(CLI::App& app) {
  auto [command, options] = add_command<ReplayCommandOptions>(app, "replay", kHelp, replay);
  add_replay_flags(command, options.replay);
  command.add_option("--policy", options.replay.policy_spec,
                     "NAME[:OPTIONS], options written as in PYTORCH_CUDA_ALLOC_CONF "
                     "(see `memreplay policies`)");
  add_json_option(command, options.json, "the metrics");
  command.add_flag("--wide", options.wide, "every column: allocated and requested peaks, each kind of device call");
}

}  // namespace memreplay::cli
