// memreplay fit TRACE --policy SPEC: the smallest GPU this run fits on, or, with --capacity, where
// it would fail on that one and from which stack.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "proto/trace_reader.h"
#include "replayer/replay_runner.h"
#include "tools/cli/command.h"
#include "tools/cli/commands.h"
#include "tools/cli/replay_options.h"
#include "tools/cli/text_format.h"

namespace memreplay::cli {
namespace {

constexpr const char* kHelp =
    "Find the smallest per-process capacity the trace replays in without OOM (bisection), or with "
    "--capacity tell whether it fits and which allocation fails first, with its stack.\n"
    "  memreplay fit run.mrt --policy pytorch:expandable_segments:True\n"
    "  memreplay fit run.mrt --policy pytorch --capacity 40GiB";

nlohmann::json describe_oom(const ReplayMetrics& m, const std::string& trace) {
  if (!m.oom_at_event) return nullptr;
  nlohmann::json stack = nlohmann::json::array();
  if (m.oom_stack != 0) {
    TraceReader reader(trace);
    for (const auto& f : reader.stack_frames(m.oom_stack))
      stack.push_back({{"filename", f.filename}, {"line", f.line}, {"name", f.name}});
  }
  return {{"replay_event", *m.oom_at_event}, {"trace_event", *m.oom_trace_event},
          {"request_bytes", *m.oom_request_bytes}, {"stack", stack}};
}

struct FitOptions {
  ReplayOptions replay;
  std::string resolution = "1MiB";
  std::string json;
};

void fit(const FitOptions& options) {
  const ReplayOptions& replay = options.replay;
  nlohmann::json result;
  if (replay.capacity) {
    const ReplayMetrics m = run_replay(replay);
    if (const auto warning = incomplete_warning(replay.trace_path, m)) std::fprintf(stderr, "memreplay: warning: %s\n", warning->c_str());
    result = {{"complete", m.complete}, {"capacity", *replay.capacity}, {"fits", !m.oom_at_event},
              {"oom", describe_oom(m, replay.trace_path)}, {"metrics", to_json(m)}};
    if (options.json != "-") {
      std::printf("%s at %s: %s\n", replay.policy_spec.c_str(), format_bytes(*replay.capacity).c_str(),
                  m.oom_at_event ? "OUT OF MEMORY" : "fits");
      if (m.oom_at_event) {
        std::printf("  first failing allocation: replay event %llu (trace event %llu), %s\n",
                    static_cast<unsigned long long>(*m.oom_at_event),
                    static_cast<unsigned long long>(*m.oom_trace_event),
                    format_bytes(*m.oom_request_bytes).c_str());
        for (const auto& frame : result["oom"]["stack"])
          std::printf("    %s:%d %s\n", frame["filename"].get<std::string>().c_str(),
                      frame["line"].get<int>(), frame["name"].get<std::string>().c_str());
      }
    }
  } else {
    const FitResult fit = find_min_capacity(replay, parse_bytes(options.resolution, "--resolution"));
    if (const auto warning = incomplete_warning(replay.trace_path, fit.uncapped)) std::fprintf(stderr, "memreplay: warning: %s\n", warning->c_str());
    result = {{"complete", fit.uncapped.complete},
              {"min_fit_bytes", fit.min_fit_bytes},      {"max_fail_bytes", fit.max_fail_bytes},
              {"resolution_bytes", fit.resolution_bytes}, {"replays", fit.replays},
              {"uncapped", to_json(fit.uncapped)}};
    if (options.json != "-")
      std::printf("%s fits in %s (%llu bytes; fails at %llu; %llu replays). Uncapped reserved peak: %s\n",
                  replay.policy_spec.c_str(), format_bytes(fit.min_fit_bytes).c_str(),
                  static_cast<unsigned long long>(fit.min_fit_bytes),
                  static_cast<unsigned long long>(fit.max_fail_bytes),
                  static_cast<unsigned long long>(fit.replays), format_bytes(fit.uncapped.reserved_peak).c_str());
  }
  if (!options.json.empty()) write_json(result, options.json);
}

}  // namespace

void add_fit_command(CLI::App& app) {
  auto [command, options] = add_command<FitOptions>(app, "fit", kHelp, fit);
  add_replay_options(command, options.replay);
  command.add_option("--policy", options.replay.policy_spec, "NAME[:OPTIONS] (see `memreplay policies`)");
  command.add_option("--resolution", options.resolution, "stop the bisection at this step (default 1MiB)");
  add_json_option(command, options.json, "the result");
}

}  // namespace memreplay::cli
