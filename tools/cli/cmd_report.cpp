// memreplay report TRACE [--policy ...] -o report.html: one self-contained HTML page.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "results/report_data.h"
#include "results/report_html.h"
#include "tools/cli/command.h"
#include "tools/cli/commands.h"
#include "tools/cli/replay_flags.h"
#include "tools/cli/text_format.h"

namespace memreplay::cli {
namespace {

constexpr const char* kHelp =
    "Write one self-contained HTML report (no network; opens from disk): the advice, the memory timeline "
    "(reserved, allocated, requested per policy; zoom and hover), the segment map at each policy's reserved peak "
    "and the stacks live then. A damaged or incomplete trace gets no report (exit 2).\n"
    "  memreplay report run.mrt -o report.html\n"
    "  memreplay report run.mrt --policy pytorch --policy pytorch:expandable_segments:True -o report.html";

struct ReportOptions {
  ReplayOptions replay;
  std::vector<std::string> policies;
  std::string output;
  std::string json;
  bool allow_incomplete = false;
  double max_call_ratio = results::kDefaultMaxCallRatio;
};

void report(ReportOptions options) {
  options.replay = with_recorded_capacity(options.replay);
  refuse_incomplete_trace(options.replay.trace_path, options.allow_incomplete,
                          "no report written (--allow-incomplete to draw what it holds)");
  std::vector<std::string> policies = options.policies;
  if (policies.empty()) policies = results::default_report_policies();
  for (const auto& spec : policies) {
    ReplayOptions one = options.replay;
    one.policy_spec = spec;
    warn_before_replay(one);
  }
  const nlohmann::json data = results::build_report_data(options.replay, policies, options.max_call_ratio);
  const std::string page = results::render_report_html(data);
  write_file_atomically(options.output, page);
  if (options.json != "-")
    std::printf("%s: report of %zu policies written to %s (%.2f MB)\n", options.replay.trace_path.c_str(),
                policies.size(), options.output.c_str(), double(page.size()) / 1e6);
  if (!options.json.empty()) write_json(data, options.json);
}

}  // namespace

void add_report_command(CLI::App& app) {
  auto [command, options] = add_command<ReportOptions>(app, "report", kHelp, report);
  add_policy_list_flags(command, options.replay, options.policies,
                        "a policy to draw (repeat; the first is the current setting the advice starts from; default "
                        "pytorch and pytorch:expandable_segments:True)",
                        options.json, "the report's data");
  command.add_option("-o,--output", options.output, "the HTML file to write")->required();
  command.add_flag("--allow-incomplete", options.allow_incomplete, "draw a trace that has no footer");
  add_max_call_ratio_flag(command, options.max_call_ratio, "the first policy's");
}

}  // namespace memreplay::cli
