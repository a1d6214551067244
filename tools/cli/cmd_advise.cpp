// memreplay advise TRACE: a ranked list of what to change, each with the evidence of replays.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "base/text_escape.h"
#include "results/advice.h"
#include "tools/cli/command.h"
#include "tools/cli/commands.h"
#include "tools/cli/replay_flags.h"
#include "tools/cli/text_format.h"

namespace memreplay::cli {
namespace {

constexpr const char* kHelp =
    "Say what to change, ranked, with the evidence of replays of this trace: the PYTORCH_CUDA_ALLOC_CONF string "
    "(or other policy) to paste, reserved peak and device calls before and after, the smallest capacity that fits, "
    "the common GPUs it fits on; empty_cache() in a loop, a large allocated-reserved gap and the stacks that own "
    "the peak, with numbers. Under --capacity, an OOM of the current setting comes first, with the setting that "
    "fits there; settings are ranked by compare's rule (no OOM, at most --max-call-ratio times the device calls, "
    "then the lowest reserved peak).\n"
    "  memreplay advise run.mrt\n"
    "  memreplay advise run.mrt --policy pytorch:expandable_segments:True --capacity 40GiB";

struct AdviseOptions {
  ReplayOptions replay;
  bool no_fit = false;
  double max_call_ratio = results::kDefaultMaxCallRatio;
  bool allow_incomplete = false;
  std::string json;
};

void advise(AdviseOptions options) {
  options.replay = with_recorded_capacity(options.replay);
  refuse_incomplete_trace(options.replay.trace_path, options.allow_incomplete,
                          "advice from part of a run would mislead (--allow-incomplete to advise anyway)");
  warn_before_replay(options.replay);
  const results::Advice advice =
      results::advise(options.replay, options.replay.policy_spec, !options.no_fit, options.max_call_ratio);
  warn_after_replay(options.replay, advice.current.metrics);
  const auto frames = results::stack_lines(options.replay.trace_path, advice.peak.top_stacks);
  if (options.json != "-")
    std::fputs(results::advice_text(advice, results::terminal_safe_frames(frames)).c_str(), stdout);
  if (!options.json.empty()) write_json(results::advice_json(advice, frames), options.json);
}

}  // namespace

void add_advise_command(CLI::App& app) {
  auto [command, options] = add_command<AdviseOptions>(app, "advise", kHelp, advise);
  add_replay_flags(command, options.replay);
  command.add_option("--policy", options.replay.policy_spec, "the setting the job runs with now (default pytorch)");
  command.add_flag("--no-fit", options.no_fit, "skip the smallest-capacity search (faster)");
  add_max_call_ratio_flag(command, options.max_call_ratio, "the current setting's");
  command.add_flag("--allow-incomplete", options.allow_incomplete, "advise on a trace that has no footer");
  add_json_option(command, options.json, "the advice");
}

}  // namespace memreplay::cli
