// memreplay sweep TRACE... --policy SPEC... --capacity LIST -o FILE: a fleet of traces under
// several policies and capacities, one JSON line per task (results/sweep.h does the work).
#include <cstdio>
#include <iostream>

#include "proto/input_error.h"
#include "results/sweep.h"
#include "tools/cli/command.h"
#include "tools/cli/commands.h"
#include "tools/cli/text_format.h"

namespace memreplay::cli {
namespace {

constexpr const char* kHelp =
    "Replay every trace under every policy at every capacity, on every core, and write one JSON line per task "
    "(name, trace, policy, capacity, status, then the fields of `replay --json`; a `fit` task adds \"fit\", the "
    "smallest capacity it fits in) as each finishes. A trace that cannot be replayed becomes an error line and "
    "the sweep goes on; exit 1 when any task of this run failed. --shard I/N runs one of N disjoint parts (an "
    "array job's task), --resume continues a killed sweep without writing any task twice.\n"
    "  memreplay sweep 'runs/*.mrt' --policy all --capacity fit -o results.jsonl\n"
    "  memreplay sweep --manifest fleet.tsv --policy pytorch --policy pytorch:expandable_segments:True "
    "--capacity 40GiB,80GiB,fit --shard 3/16 --resume -o shard-3.jsonl\n"
    "  memreplay sweep-summary shard-*.jsonl --markdown";

struct SweepCommandOptions {
  results::SweepPlan plan;
  std::vector<std::string> policies;
  std::vector<std::string> capacities;
  std::string shard;
  results::SweepRunOptions run;
  std::string resolution = "1MiB";
  std::string name;
};

void sweep(SweepCommandOptions& options) {
  results::SweepPlan plan = options.plan;
  plan.policies = results::expand_policies(options.policies);
  std::vector<std::string> warnings;
  plan.capacities = results::parse_sweep_capacities(options.capacities, &warnings);
  for (const auto& w : warnings) warn(w);
  if (!options.shard.empty()) plan.shard = results::parse_shard(options.shard);
  if (!options.name.empty()) {
    if (plan.traces.size() != 1)
      throw InputError("sweep: --name names one TRACE; a fleet names its traces in --manifest");
    plan.named_traces.push_back({options.name, plan.traces.front()});
    plan.traces.clear();
  }
  if (plan.traces.empty() && plan.named_traces.empty() && plan.manifests.empty())
    throw InputError("sweep: no traces: give TRACE... or --manifest FILE");
  options.run.settings.fit.resolution_bytes = parse_bytes(options.resolution, "--resolution");
  const bool terminal = stderr_is_terminal();
  if (terminal)
    options.run.on_progress = [](const results::SweepProgress& p) {
      std::cerr << "\r" << results::progress_line(p) << "\033[K" << std::flush;
    };
  const results::SweepOutcome outcome = results::run_sweep(plan, options.run);
  if (terminal) std::cerr << "\r\033[K";
  std::cerr << results::progress_line(outcome.progress);
  if (outcome.already_done > 0) std::cerr << "; " << outcome.already_done << " already in " << options.run.output;
  if (outcome.torn_bytes_cut > 0) std::cerr << " (a torn last line of " << outcome.torn_bytes_cut << " bytes cut)";
  std::cerr << "\n";
  if (outcome.progress.failed > 0) command_exit_status = 1;
}

}  // namespace

void add_sweep_command(CLI::App& app) {
  auto options = std::make_shared<SweepCommandOptions>();
  CLI::App* command = app.add_subcommand("sweep", kHelp);
  command->callback([options] { sweep(*options); });
  SweepCommandOptions& o = *options;
  command->add_option("TRACE", o.plan.traces, "trace files (.mrt) or quoted glob patterns ('runs/*.mrt')");
  command->add_option("--manifest", o.plan.manifests,
                      "a file of traces, one a line: NAME<TAB>PATH or PATH (relative to the file); repeatable");
  command->add_option("--name", o.name, "with one TRACE: its name in the lines (default: its path)");
  add_plugin_option(*command);
  command->add_option("--policy", o.policies, "a policy spec, repeatable; `all` (the default): every registered one");
  command->add_option("--capacity", o.capacities,
                      "comma-separated, repeatable: none (uncapped, the default), fit (the smallest capacity that "
                      "fits, as `memreplay fit`), or a size (40GiB, 80GB)");
  command->add_option("-o,--output", o.run.output, "JSON Lines file (appended to; default stdout)");
  command->add_option("-j,--jobs", o.run.jobs, "tasks at once (default: every CPU this process may use)");
  command->add_option("--shard", o.shard, "I/N: run only shard I of N (0 <= I < N), by a stable hash of each task");
  command->add_flag("--resume", o.run.resume, "skip the tasks the output file holds already (a killed sweep)");
  command->add_option("--resolution", o.resolution, "fit tasks: stop the bisections at this step (default 1MiB)");
  command
      ->add_option(
          "--grid", o.run.settings.fit.grid_points,
          "fit tasks: capacities tested on the grid (" + std::to_string(results::FitSearch{}.grid_points) + ")")
      ->check(CLI::Range(2, 4096));
  command->add_flag("--timeline", o.run.settings.timeline, "keep each replay's timeline in its line (~40 KB more)");
  command->add_flag("--lenient", o.run.settings.lenient, "count and skip events inconsistent with the live state");
}

}  // namespace memreplay::cli
