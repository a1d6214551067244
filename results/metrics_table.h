// The table of replays that `replay` and `compare` print: one row per policy, within 120 columns
// (more columns, each kind of device call its own, with `wide`), one unit per column, and under
// it the footnotes that define each column and the star.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "replayer/metrics.h"
#include "results/recommendation.h"

namespace memreplay::results {

struct MetricsTableOptions {
  bool wide = false;
  const Recommendation* recommendation = nullptr;  // the star and its rule; none for one replay
};

std::string metrics_table_text(const std::vector<ReplayMetrics>& rows, const MetricsTableOptions& options = {});

// The note for a policy that takes a fixed share of the device up front (PolicyInfo::
// reserves_up_front) when its reserved peak shows it: what it took, and the device's memory or the
// capacity it took it from; nullopt otherwise.
std::optional<std::string> up_front_note(const ReplayMetrics& m);

// What "complete" means, for every output that says it.
inline constexpr const char* kCompleteDefinition =
    "complete: every event of a whole trace replayed (the replay did not stop at an OOM, and the file was not cut "
    "off mid-write)";

}  // namespace memreplay::results
