// memreplay export TRACE --to memory-viz|perfetto -o FILE: the trace in the viewers people use.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "results/memory_viz_export.h"
#include "results/perfetto_export.h"
#include "tools/cli/command.h"
#include "tools/cli/commands.h"
#include "tools/cli/replay_flags.h"
#include "tools/cli/text_format.h"

namespace memreplay::cli {
namespace {

constexpr const char* kHelp =
    "Export a trace to the viewers people already use.\n"
    "  --to memory-viz: a PyTorch memory snapshot pickle, for pytorch.org/memory_viz and torch.cuda._memory_viz "
    "(a trace without segment events, such as an RMM log or an interposer trace, gets the segments of a replay "
    "under --policy, default pytorch, and says so)\n"
    "  --to perfetto: Chrome trace-event JSON (ui.perfetto.dev, chrome://tracing): counter tracks of reserved, "
    "allocated and requested bytes per --policy, and every allocation as a slice\n"
    "  memreplay export run.mrt --to memory-viz -o snap.pickle\n"
    "  memreplay export run.mrt --to perfetto --policy pytorch --policy pytorch:expandable_segments:True -o run.json";

struct ExportOptions {
  std::string trace;
  std::string to;
  std::string output;
  std::vector<std::string> policies;
  uint32_t trace_device = 0;
  bool allow_incomplete = false;
  std::string json;
};

// What was written, as `--json` reports it.
nlohmann::json written_json(const ExportOptions& options, const std::string& bytes) {
  return {{"trace", options.trace}, {"to", options.to}, {"output", options.output}, {"bytes", bytes.size()}};
}

void export_trace(const ExportOptions& options) {
  refuse_incomplete_trace(options.trace, options.allow_incomplete, "--allow-incomplete to export what it holds");
  if (options.to == "memory-viz") {
    const std::string policy = options.policies.empty() ? "pytorch" : options.policies.front();
    if (options.policies.size() > 1) warn("--to memory-viz lays segments out under one policy: " + policy);
    const auto out = results::export_memory_viz(options.trace, options.trace_device, policy);
    if (out.segments_replayed_under.empty() && !options.policies.empty())
      warn("--policy is not used: the trace has segment events of its own, exported as they are");
    write_file_atomically(options.output, out.pickle);
    if (options.json != "-") {
      std::printf("%s: %llu trace entries and %llu segments written to %s\n", options.trace.c_str(),
                  static_cast<unsigned long long>(out.entries), static_cast<unsigned long long>(out.segments),
                  options.output.c_str());
      if (!out.segments_replayed_under.empty())
        std::printf(
            "  the trace has no segment events: segments, block addresses and block sizes are those of a "
            "replay under %s\n",
            out.segments_replayed_under.c_str());
    }
    if (!options.json.empty()) {
      nlohmann::json summary = written_json(options, out.pickle);
      summary["entries"] = out.entries;
      summary["segments"] = out.segments;
      summary["segments_replayed_under"] =
          out.segments_replayed_under.empty() ? nlohmann::json(nullptr) : nlohmann::json(out.segments_replayed_under);
      write_json(summary, options.json);
    }
    return;
  }
  const std::vector<std::string> policies = results::perfetto_export_policies(options.policies);
  const std::string perfetto = results::export_perfetto_replays(options.trace, options.trace_device, policies);
  write_file_atomically(options.output, perfetto);
  if (options.json != "-")
    std::printf("%s: %zu policies' counters and the allocations written to %s\n", options.trace.c_str(),
                policies.size(), options.output.c_str());
  if (!options.json.empty()) {
    nlohmann::json summary = written_json(options, perfetto);
    summary["policies"] = policies;
    write_json(summary, options.json);
  }
}

}  // namespace

void add_export_command(CLI::App& app) {
  auto [command, options] = add_command<ExportOptions>(app, "export", kHelp, export_trace);
  add_trace_argument(command, options.trace);
  command.add_option("--to", options.to, "memory-viz or perfetto")
      ->required()
      ->check(CLI::IsMember({"memory-viz", "perfetto"}));
  command.add_option("-o,--output", options.output, "file to write")->required();
  command.add_option("--policy", options.policies,
                     "perfetto: a policy whose counters to add (repeat; default pytorch); memory-viz: the policy whose "
                     "replay lays out the segments of a trace that has none (default pytorch)");
  command.add_option("--trace-device", options.trace_device, "which recorded device (default 0)");
  command.add_flag("--allow-incomplete", options.allow_incomplete, "export a trace that has no footer");
  add_json_option(command, options.json, "what was written (trace, format, output file, bytes, counts)");
}

}  // namespace memreplay::cli
