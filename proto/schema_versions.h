// Every JSON document memreplay writes or reads carries a "schema" name and a "schema_version";
// here are all the versions, in one place (in proto/, the formats' folder, because replayer/
// writes one of them and stands below results/). Bump one on any change a reader of the old version
// would misread (a field removed, renamed or given another meaning); a field added is a bump too
// where the readers refuse unknown fields (the check baseline does).
#pragma once

#include <cstdint>

namespace memreplay::schema {

// replay --json, and each "results" entry of compare --json (replayer/metrics.cpp).
inline constexpr int kMetrics = 1;
// compare --json, "memreplay-compare". 2: entries carry reserved_over_requested and failed.
inline constexpr int kCompare = 2;
// fit --json. 2: several policies as {"results": [...]}.
inline constexpr int kFit = 2;
// advise --json, "memreplay-advice".
inline constexpr int kAdvice = 1;
// report --json and the page's data, "memreplay-report". 2: series as levels of chunks.
inline constexpr int kReportData = 2;

// The check baseline, "memreplay-check-baseline" (results/baseline.h): written at kBaseline, read
// from kOldestBaseline to kBaseline. 2: entries hold requested_peak and events (the shrink guard).
inline constexpr int64_t kBaseline = 2;
inline constexpr int64_t kOldestBaseline = 1;
// check --json, "memreplay-check-result". 2: a status per case (passed, failed, new), notes on
// findings, the baseline update, "error" for bad input.
inline constexpr int kCheckResult = 2;

}  // namespace memreplay::schema
