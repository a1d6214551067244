// `memreplay compare`: one trace replayed under several policies, one replay each (run_replay),
// and the document its --json writes (and memreplay.compare returns).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "replayer/metrics.h"
#include "replayer/replay_options.h"

namespace memreplay::results {

// The policies compare replays: each spec as given, in order (a repeated one again); `all`, or
// none at all, every registered policy with its default options (plugins loaded so far included).
std::vector<std::string> compare_policy_specs(const std::vector<std::string>& asked);

// One row of the document: replay's JSON with reserved_over_requested and failed.
nlohmann::json compare_row_json(const ReplayMetrics& m);
// The whole document for `rows`, replays of `base` (its policy_spec is not used).
nlohmann::json compare_json(const ReplayOptions& base, const std::vector<ReplayMetrics>& rows);

}  // namespace memreplay::results
