// Every JSON document memreplay writes or reads carries a "schema" name and a "schema_version";
// here are all the versions, in one place (in proto/, the formats' folder, because replayer/
// writes one of them and stands below results/). Bump one on any change a reader of the old version
// would misread (a field removed, renamed or given another meaning); a field added is a bump too
// where the readers refuse unknown fields (the check baseline does).
#pragma once

#include <cstdint>

namespace memreplay::schema {

// replay --json, and each "results" entry of compare --json (replayer/metrics.cpp). 2: "complete"
// is false for a replay that stopped at an OOM too ("trace_complete" is the file's), device_calls
// and device_calls_by_kind, the moment at the peak (peak_*_event) and both ends of it.
inline constexpr int kMetrics = 2;
// compare --json, "memreplay-compare". 2: entries carry reserved_over_requested and failed.
// 3: recommended, call_rule, each entry's standing.
inline constexpr int kCompare = 3;
// fit --json. 2: several policies as {"results": [...]}. 3: fails_at_bytes (the replayed failure
// one resolution below), fails_below_fits_above_bytes, headroom_bytes.
inline constexpr int kFit = 3;
// advise --json, "memreplay-advice". 2: capacity, recommended, call_rule, each setting's fit and
// standing, device calls by kind.
inline constexpr int kAdvice = 2;
// report --json and the page's data, "memreplay-report". 2: series as levels of chunks. 3: the star
// by the call rule, device calls by kind, the moment at the peak.
inline constexpr int kReportData = 3;

// The check baseline, "memreplay-check-baseline" (results/baseline.h): written at kBaseline, read
// from kOldestBaseline to kBaseline. 2: entries hold requested_peak and events (the shrink guard).
inline constexpr int64_t kBaseline = 2;
inline constexpr int64_t kOldestBaseline = 1;
// check --json, "memreplay-check-result". 2: a status per case (passed, failed, new), notes on
// findings, the baseline update, "error" for bad input.
inline constexpr int kCheckResult = 2;

}  // namespace memreplay::schema
