// memreplay validate TRACE: check every event against the live state before it.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "base/text_escape.h"
#include "proto/trace_reader.h"
#include "replayer/pool_consistency.h"
#include "replayer/replay_runner.h"
#include "replayer/trace_validator.h"
#include "tools/cli/command.h"
#include "tools/cli/commands.h"
#include "tools/cli/text_format.h"

namespace memreplay::cli {
namespace {

constexpr const char* kHelp =
    "Check a trace: frees of unknown addresses, double allocations, overlapping live blocks, time "
    "going backwards and, in a trace with private pools, allocations outside every live segment of "
    "their pool and frees into another pool, each named with its event index. Exit status 2 if any, and for a "
    "trace with no event to read (cut off before its first whole chunk, or empty).\n"
    "  memreplay validate run.mrt";

struct ValidateOptions {
  std::string trace;
  std::string json;
};

void validate(const ValidateOptions& options) {
  TraceReader reader(options.trace);
  TraceValidator validator(100, may_have_private_pools(reader.header()));
  std::vector<Event> batch;
  uint64_t index = 0;
  while (reader.next_batch(batch)) {
    validator.add(batch, index);
    index += batch.size();
  }
  refuse_eventless_trace(reader, index != 0);
  nlohmann::json problems = nlohmann::json::array();
  for (const auto& p : validator.problems())
    problems.push_back({{"event", p.event}, {"kind", p.kind}, {"message", p.message}});
  if (options.json != "-") {
    for (const auto& p : validator.problems())
      std::printf("%s: event %llu: %s\n", options.trace.c_str(), static_cast<unsigned long long>(p.event),
                  terminal_safe(p.message).c_str());
    if (validator.problem_count() > validator.problems().size())
      std::printf("... and %llu more\n",
                  static_cast<unsigned long long>(validator.problem_count() - validator.problems().size()));
    std::printf("%s: %llu events, %llu problems%s\n", options.trace.c_str(), static_cast<unsigned long long>(index),
                static_cast<unsigned long long>(validator.problem_count()),
                reader.complete() ? "" : " (file is incomplete: read up to its last whole chunk)");
  }
  if (!options.json.empty())
    write_json({{"trace", options.trace},
                {"events", index},
                {"complete", reader.complete()},
                {"problem_count", validator.problem_count()},
                {"problems_by_kind", validator.counts_by_kind()},
                {"problems", problems}},
               options.json);
  if (validator.problem_count() != 0) command_exit_status = 2;
}

}  // namespace

void add_validate_command(CLI::App& app) {
  add_trace_command<ValidateOptions>(app, "validate", kHelp, validate, "the findings");
}

}  // namespace memreplay::cli
