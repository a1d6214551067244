// memreplay sweep-summary RESULTS...: a sweep's lines (every shard's file) merged into the best
// setting per job and fleet totals (results/sweep_summary.h), as a table, CSV, Markdown or JSON.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "results/sweep_summary.h"
#include "tools/cli/command.h"
#include "tools/cli/commands.h"
#include "tools/cli/text_format.h"

namespace memreplay::cli {
namespace {

constexpr const char* kHelp =
    "Merge the JSON Lines of `memreplay sweep` (one file per shard, or any number; a task in several files counts "
    "once) and print per trace the best setting and the reserved memory it saves, most saved first, then fleet "
    "totals: reserved bytes saved and the jobs that would fit on each GPU size. The best setting is the lowest "
    "reserved peak among the policies replayed uncapped (capacity none or fit) without running out of memory "
    "whose device calls stay within --device-call-factor of the current setting's. Fitting on a GPU comes from a "
    "task at that capacity, else from a fit task.\n"
    "  memreplay sweep-summary shard-*.jsonl\n"
    "  memreplay sweep-summary results.jsonl --markdown summary.md --csv summary.csv --gpu 16GiB,24GiB";

struct SummaryCommandOptions {
  std::vector<std::string> files;
  std::string current = "pytorch";
  double factor = results::kDeviceCallFactor;
  std::vector<std::string> gpus;
  std::string csv, markdown, json;
};

std::vector<uint64_t> parse_gpus(const std::vector<std::string>& lists) {
  std::vector<uint64_t> out;
  for (const auto& list : lists)
    for (size_t start = 0; start <= list.size();) {
      const size_t comma = std::min(list.find(',', start), list.size());
      out.push_back(parse_bytes(list.substr(start, comma - start), "--gpu"));
      start = comma + 1;
    }
  return out;
}

// FILE, or stdout for "-".
void write_text(const std::string& text, const std::string& path) {
  if (path == "-")
    std::cout << text;
  else
    write_file_atomically(path, text);
}

void summarize(const SummaryCommandOptions& options) {
  results::SummaryOptions summary_options;
  summary_options.current_policy = options.current;
  summary_options.device_call_factor = options.factor;
  if (!options.gpus.empty()) summary_options.gpu_bytes = parse_gpus(options.gpus);
  const results::SweepSummary summary = results::summarize_sweep(options.files, summary_options);
  const bool table = options.csv != "-" && options.markdown != "-" && options.json != "-";
  if (table) std::cout << results::summary_table(summary);
  if (!options.csv.empty()) write_text(results::summary_csv(summary), options.csv);
  if (!options.markdown.empty()) write_text(results::summary_markdown(summary), options.markdown);
  if (!options.json.empty()) write_json(results::summary_json(summary), options.json);
}

}  // namespace

void add_sweep_summary_command(CLI::App& app) {
  auto [command, options] = add_command<SummaryCommandOptions>(app, "sweep-summary", kHelp, summarize);
  command.add_option("RESULTS", options.files, "JSON Lines files from `memreplay sweep` (each shard's)")
      ->required()
      ->check(CLI::ExistingFile);
  command.add_option("--current", options.current, "the setting jobs run with now (default pytorch)");
  command
      .add_option("--device-call-factor", options.factor,
                  "a better setting may make at most this many times the current setting's device calls (4)")
      ->check(CLI::PositiveNumber);
  command.add_option("--gpu", options.gpus, "GPU sizes to count the jobs that fit on (default 24GiB,40GiB,80GiB)");
  command.add_option("--csv", options.csv, "one row per trace as CSV: to FILE, or stdout with --csv -")
      ->expected(0, 1)
      ->default_str("-");
  command.add_option("--markdown", options.markdown, "the table and totals as Markdown: to FILE, or stdout (-)")
      ->expected(0, 1)
      ->default_str("-");
  add_json_option(command, options.json, "the summary");
}

}  // namespace memreplay::cli
