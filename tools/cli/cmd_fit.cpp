// memreplay fit TRACE --policy SPEC...: the smallest GPU this run fits on, or, with --capacity,
// whether it fits there and, if not, which allocation fails first and from which stack.
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "base/text_escape.h"
#include "base/units.h"
#include "replayer/replay_runner.h"
#include "results/fit_result.h"
#include "results/fit_scan.h"
#include "results/text_table.h"
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
    "capacity fits, each next to a capacity one resolution below that fails (both replayed). `advise` runs the "
    "same search.\n"
    "  memreplay fit run.mrt --policy pytorch --policy pytorch:expandable_segments:True\n"
    "  memreplay fit run.mrt --policy pytorch --capacity 40GiB";

struct FitOptions {
  ReplayOptions replay;
  std::vector<std::string> policies;
  std::string resolution = "1MiB";
  int grid = results::FitSearch{}.grid_points;
  std::string json;
  const CLI::Option* capacity_flag = nullptr;  // the --capacity as typed, to echo it
};

// "40GB (37.25 GiB)": the capacity as the user gave it, and in GiB.
std::string capacity_echo(const FitOptions& options, uint64_t capacity) {
  const std::string given = options.capacity_flag && !options.capacity_flag->results().empty()
                                ? options.capacity_flag->results().front()
                                : std::to_string(capacity) + " bytes";
  char gib[48];
  std::snprintf(gib, sizeof gib, "%.2f GiB", double(capacity) / double(1ull << 30));
  return given + " (" + gib + ")";
}

// `warning`: set to the incomplete-trace warning if there is one (printed once per command, not
// once per policy).
nlohmann::json fit_at_capacity(const FitOptions& options, const ReplayOptions& replay, bool print, bool& all_fit,
                               std::optional<std::string>& warning) {
  const ReplayMetrics m = run_replay(replay);
  if (!warning) warning = incomplete_warning(replay.trace_path, m);
  const uint64_t capacity = *replay.capacity;
  const nlohmann::json result = results::fit_at_capacity_json(replay, m);
  all_fit = all_fit && !m.oom_at_event;
  if (!print) return result;
  const std::string at = replay.policy_spec + " at " + capacity_echo(options, capacity);
  if (!m.oom_at_event) {
    std::printf("%s: fits; reserved peak %s, headroom %s (the capacity minus the reserved peak)\n", at.c_str(),
                format_bytes(m.reserved_peak).c_str(),
                format_bytes(capacity - std::min(capacity, m.reserved_peak)).c_str());
    return result;
  }
  std::printf("%s: OUT OF MEMORY\n", at.c_str());
  std::printf("  first failing allocation: replay event %llu (trace event %llu), %s\n",
              static_cast<unsigned long long>(*m.oom_at_event), static_cast<unsigned long long>(*m.oom_trace_event),
              format_bytes(*m.oom_request_bytes).c_str());
  if (replay.continue_after_oom)
    std::printf("  %llu allocations failed in all (--keep-going)\n", static_cast<unsigned long long>(m.ooms));
  for (const auto& frame : result["oom"]["stack"])
    std::printf("    %s:%d %s\n", terminal_safe(frame["filename"].get<std::string>()).c_str(), frame["line"].get<int>(),
                terminal_safe(frame["name"].get<std::string>()).c_str());
  return result;
}

void print_search(const std::string& policy, const results::FitScan& scan) {
  const auto [fits, fails] = format_bytes_apart(scan.smallest_fit_bytes, scan.fails_below_smallest_bytes);
  const std::string how = "resolution " + format_bytes(scan.resolution_bytes) + ", " + std::to_string(scan.replays) +
                          " replays; uncapped reserved peak " + format_bytes(scan.uncapped.reserved_peak);
  const std::string exact = " (" + std::to_string(scan.smallest_fit_bytes) + " bytes)";
  std::string line;
  if (scan.monotonic) {
    line = policy + " fits in " + fits + exact + "; fails at " + fails + " (" + how + ")";
  } else {
    const auto [above, below] = format_bytes_apart(scan.fits_above_bytes, scan.fails_below_above_bytes);
    line = policy + ": fitting is NOT monotonic here. Smallest capacity found to fit: " + fits + exact + ", fails at " +
           fails + "; but " + below + " fails, and every tested capacity from " + above + " (" +
           std::to_string(scan.fits_above_bytes) + " bytes) up fits (" + how + ")";
  }
  std::fputs(results::wrap_text(line, results::kTableWidth, "  ").c_str(), stdout);
}

nlohmann::json search(const ReplayOptions& replay, const results::FitSearch& how, bool print,
                      std::optional<std::string>& warning) {
  const results::FitScan scan = results::scan_min_capacity(replay, how);
  if (!warning) warning = incomplete_warning(replay.trace_path, scan.uncapped);
  if (!warning) warning = skipped_warning(replay.trace_path, scan.uncapped);
  const nlohmann::json result = results::fit_scan_json(replay, scan);
  if (print) print_search(replay.policy_spec, scan);
  return result;
}

void fit(const FitOptions& options) {
  const bool print = options.json != "-";
  std::vector<std::string> policies = options.policies;
  if (policies.empty()) policies.push_back(options.replay.policy_spec);
  const results::FitSearch how{parse_bytes(options.resolution, "--resolution"), options.grid};
  std::vector<nlohmann::json> results;
  bool all_fit = true;
  std::optional<std::string> warning;
  for (const auto& spec : policies) {
    ReplayOptions replay = options.replay;
    replay.policy_spec = spec;
    warn_before_replay(replay);
    results.push_back(replay.capacity ? fit_at_capacity(options, replay, print, all_fit, warning)
                                      : search(replay, how, print, warning));
  }
  if (warning) std::fprintf(stderr, "memreplay: warning: %s\n", warning->c_str());
  if (!options.json.empty()) write_json(results::fit_json(results), options.json);
  if (!all_fit) command_exit_status = 1;
}

}  // namespace

void add_fit_command(CLI::App& app) {
  auto [command, options] = add_command<FitOptions>(app, "fit", kHelp, fit);
  add_replay_flags(command, options.replay);
  options.capacity_flag = command.get_option("--capacity");
  command.add_option("--policy", options.policies, "NAME[:OPTIONS] (see `memreplay policies`); repeat for several");
  command.add_option("--resolution", options.resolution, "stop the bisections at this step (default 1MiB)");
  command
      .add_option("--grid", options.grid,
                  "capacities tested evenly between requested and reserved peak (default " +
                      std::to_string(results::FitSearch{}.grid_points) + ")")
      ->check(CLI::Range(2, 4096));
  add_json_option(command, options.json, "the result");
}

}  // namespace memreplay::cli
