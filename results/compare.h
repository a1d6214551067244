// `memreplay compare`: one trace replayed under several policies, one replay each (run_replay),
// the star over them (recommendation.h) and the document its --json writes (and memreplay.compare
// returns).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "replayer/metrics.h"
#include "replayer/replay_options.h"
#include "results/recommendation.h"

namespace memreplay::results {

// The policies compare replays: each spec as given, in order (a repeated one again); `all`, or
// none at all, every registered policy with its default options (plugins loaded so far included).
std::vector<std::string> compare_policy_specs(const std::vector<std::string>& asked);

// The current setting the star's call rule starts from: the first policy asked, pytorch for `all`
// (or none).
std::string compare_current_setting(const std::vector<std::string>& asked);

// The star over `rows`, the replays of `base` under `specs` (compare_policy_specs(asked)): the call
// rule from the current setting's row (the first row when no row is the current setting's).
Recommendation compare_recommendation(const ReplayOptions& base, const std::vector<std::string>& asked,
                                      const std::vector<std::string>& specs, const std::vector<ReplayMetrics>& rows,
                                      double max_call_ratio = kDefaultMaxCallRatio);

// One row of the document: replay's JSON with reserved_over_requested, failed and its standing.
nlohmann::json compare_row_json(const ReplayMetrics& m, Standing standing);
// The whole document for `rows`, the replays of `base` under `specs` (its policy_spec is not used),
// with their star.
nlohmann::json compare_json(const ReplayOptions& base, const std::vector<std::string>& specs,
                            const std::vector<ReplayMetrics>& rows, const Recommendation& recommendation);

}  // namespace memreplay::results
