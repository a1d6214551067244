// memreplay fit TRACE --policy SPEC...: the smallest GPU this run fits on, or, with --capacity,
// whether it fits there and, if not, which allocation fails first and from which stack.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "base/units.h"
#include "proto/trace_reader.h"
#include "replayer/replay_runner.h"
#include "results/fit_scan.h"
#include "tools/cli/command.h"
#include "tools/cli/commands.h"
#include "tools/cli/replay_flags.h"
#include "tools/cli/text_format.h"

namespace memreplay::cli {
namespace {

constexpr const char* kHelp =
    "Find the smallest per-process capacity the trace replays in without OOM, or with --capacity tell whether it "
    "fits and which allocation fails first, with its stack (exit 1 when it does not fit). Fitting need not be "
    "monotonic (a cap changes when a caching allocator frees and retries): the search tests a grid of capacities "
    "and bisects, and reports both the smallest capacity found to fit and the one above which every tested "
    "capacity fits.\n"
    "  memreplay fit run.mrt --policy pytorch --policy pytorch:expandable_segments:True\n"
    "  memreplay fit run.mrt --policy pytorch --capacity 40GiB";

nlohmann::json describe_oom(const ReplayMetrics& m, const std::string& trace) {
  if (!m.oom_at_event) return nullptr;
  nlohmann::json stack = nlohmann::json::array();
  if (m.oom_stack != 0) {
    TraceReader reader(trace);
    for (const auto& f : reader.stack_frames(m.oom_stack))
      stack.push_back({{"filename", f.filename}, {"line", f.line}, {"name", f.name}});
  }
  return {{"replay_event", *m.oom_at_event},
          {"trace_event", *m.oom_trace_event},
          {"request_bytes", *m.oom_request_bytes},
          {"stack", stack}};
}

struct FitOptions {
  ReplayOptions replay;
  std::vector<std::string> policies;
  std::string resolution = "1MiB";
  int grid = 32;
  std::string json;
};

// `warning`: set to the incomplete-trace warning if there is one (printed once per command, not
// once per policy).
nlohmann::json fit_at_capacity(const ReplayOptions& replay, bool print, bool& all_fit,
                               std::optional<std::string>& warning) {
  const ReplayMetrics m = run_replay(replay);
  if (!warning) warning = incomplete_warning(replay.trace_path, m);
  const nlohmann::json result = {{"policy", replay.policy_spec},
                                 {"complete", m.complete},
                                 {"capacity", *replay.capacity},
                                 {"fits", !m.oom_at_event},
                                 {"oom", describe_oom(m, replay.trace_path)},
                                 {"metrics", to_json(m)}};
  all_fit = all_fit && !m.oom_at_event;
  if (print) {
    std::printf("%s at %s: %s\n", replay.policy_spec.c_str(), format_bytes(*replay.capacity).c_str(),
                m.oom_at_event ? "OUT OF MEMORY" : "fits");
    if (m.oom_at_event) {
      std::printf("  first failing allocation: replay event %llu (trace event %llu), %s\n",
                  static_cast<unsigned long long>(*m.oom_at_event), static_cast<unsigned long long>(*m.oom_trace_event),
                  format_bytes(*m.oom_request_bytes).c_str());
      for (const auto& frame : result["oom"]["stack"])
        std::printf("    %s:%d %s\n", frame["filename"].get<std::string>().c_str(), frame["line"].get<int>(),
                    frame["name"].get<std::string>().c_str());
    }
  }
  return result;
}

nlohmann::json search(const ReplayOptions& replay, uint64_t resolution, int grid, bool print,
                      std::optional<std::string>& warning) {
  const results::FitScan scan = results::scan_min_capacity(replay, resolution, grid);
  nlohmann::json probes = nlohmann::json::array();
  for (const auto& p : scan.probes) probes.push_back({{"capacity", p.capacity}, {"fits", p.fits}});
  if (!warning) warning = incomplete_warning(replay.trace_path, scan.uncapped);
  if (!warning) warning = skipped_warning(replay.trace_path, scan.uncapped);
  // The capacities first (what a script reads), then how they were found.
  const nlohmann::json result = {{"policy", replay.policy_spec},
                                 {"complete", scan.uncapped.complete},
                                 {"min_fit_bytes", scan.smallest_fit_bytes},
                                 {"fits_above_bytes", scan.fits_above_bytes},
                                 {"max_fail_bytes", scan.largest_fail_bytes},
                                 {"monotonic", scan.monotonic},
                                 {"resolution_bytes", scan.resolution_bytes},
                                 {"replays", scan.replays},
                                 {"probes", probes},
                                 {"uncapped", to_json(scan.uncapped)}};
  if (!print) return result;
  if (scan.monotonic)
    std::printf("%s fits in %s (%llu bytes; fails at %s; %llu replays). Uncapped reserved peak: %s\n",
                replay.policy_spec.c_str(), format_bytes(scan.smallest_fit_bytes).c_str(),
                static_cast<unsigned long long>(scan.smallest_fit_bytes), format_bytes(scan.largest_fail_bytes).c_str(),
                static_cast<unsigned long long>(scan.replays), format_bytes(scan.uncapped.reserved_peak).c_str());
  else
    std::printf(
        "%s: fitting is NOT monotonic here. Smallest capacity found to fit: %s (%llu bytes); but %s fails, "
        "and every tested capacity from %s (%llu bytes) up fits (%llu replays). Uncapped reserved peak: %s\n",
        replay.policy_spec.c_str(), format_bytes(scan.smallest_fit_bytes).c_str(),
        static_cast<unsigned long long>(scan.smallest_fit_bytes), format_bytes(scan.largest_fail_bytes).c_str(),
        format_bytes(scan.fits_above_bytes).c_str(), static_cast<unsigned long long>(scan.fits_above_bytes),
        static_cast<unsigned long long>(scan.replays), format_bytes(scan.uncapped.reserved_peak).c_str());
  return result;
}

void fit(const FitOptions& options) {
  const bool print = options.json != "-";
  std::vector<std::string> policies = options.policies;
  if (policies.empty()) policies.push_back(options.replay.policy_spec);
  const uint64_t resolution = parse_bytes(options.resolution, "--resolution");
  nlohmann::json results = nlohmann::json::array();
  bool all_fit = true;
  std::optional<std::string> warning;
  for (const auto& spec : policies) {
    ReplayOptions replay = options.replay;
    replay.policy_spec = spec;
    warn_before_replay(replay);
    results.push_back(replay.capacity ? fit_at_capacity(replay, print, all_fit, warning)
                                      : search(replay, resolution, options.grid, print, warning));
  }
  if (warning) std::fprintf(stderr, "memreplay: warning: %s\n", warning->c_str());
  if (!options.json.empty()) {
    // One policy: its object, as before; several: {"results": [...]}.
    nlohmann::json out = results.size() == 1 ? results[0] : nlohmann::json{{"results", results}};
    out["schema_version"] = 2;
    write_json(out, options.json);
  }
  if (!all_fit) command_exit_status = 1;
}

}  // namespace

void add_fit_command(CLI::App& app) {
  auto [command, options] = add_command<FitOptions>(app, "fit", kHelp, fit);
  add_replay_flags(command, options.replay);
  command.add_option("--policy", options.policies, "NAME[:OPTIONS] (see `memreplay policies`); repeat for several");
  command.add_option("--resolution", options.resolution, "stop the bisections at this step (default 1MiB)");
  command.add_option("--grid", options.grid, "capacities tested evenly between requested and reserved peak (32)")
      ->check(CLI::Range(2, 4096));
  add_json_option(command, options.json, "the result");
}

}  // namespace memreplay::cli
