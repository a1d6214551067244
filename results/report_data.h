// What `memreplay report` draws, computed: the replays of one trace under each policy (one
// timeline point per replayed event, at any length), each policy's state at its reserved peak
// (segments, blocks, the stacks that own it), and the advice. As one JSON document whose series
// are packed at several resolutions (results/report_series.h) so a long trace stays small.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "replayer/replay_options.h"
#include "results/recommendation.h"

namespace memreplay::results {

// The policies a report draws when none are asked for: pytorch and pytorch:expandable_segments:True.
const std::vector<std::string>& default_report_policies();

// The first of `policies` is the current setting (the advice and the star's call rule start from
// it). Throws InputError for a damaged trace or a bad policy spec.
nlohmann::json build_report_data(const ReplayOptions& base, const std::vector<std::string>& policies,
                                 double max_call_ratio = kDefaultMaxCallRatio);

}  // namespace memreplay::results
