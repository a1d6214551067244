// Several replays of one trace in one pass over its file: each chunk is read and decoded once and
// fed to one ReplaySession per policy. What `check`, `advise` and `report` run; `replay` and
// `compare` give the same numbers one replay at a time (run_replay).
#pragma once

#include <string>
#include <vector>

#include "replayer/metrics.h"
#include "replayer/replay_options.h"

namespace memreplay::results {

struct TraceReplays {
  bool complete = true;  // the file has its footer (TraceReader::complete)
  std::vector<ReplayMetrics> metrics;  // one per policy spec, in order
};

struct ReplayLane {
  std::string policy;  // NAME[:OPTIONS]
  bool ignore_empty_cache = false;  // replay as if the job never called empty_cache()
};

// Every lane against `base` (its policy_spec is ignored). Throws InputError for a damaged trace or
// a bad spec (naming --policy and the spec).
TraceReplays replay_lanes(const ReplayOptions& base, const std::vector<ReplayLane>& lanes);
TraceReplays replay_policies(const ReplayOptions& base, const std::vector<std::string>& policy_specs);
// The specs as given, with "all" replaced by every registered policy with its default options
// (plugins loaded by then included), in the registry's order; each spec once.
std::vector<std::string> expand_policy_specs(const std::vector<std::string>& specs);

// replay_policies for each trace, up to `threads` traces at once (0: one per hardware thread);
// results in the order of `traces`. The first InputError of any trace is rethrown.
std::vector<TraceReplays> replay_traces(const std::vector<ReplayOptions>& traces,
                                        const std::vector<std::string>& policy_specs, unsigned threads = 0);

}  // namespace memreplay::results
