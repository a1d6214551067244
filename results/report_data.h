// What `memreplay report` draws, computed: the replays of one trace under each policy (full-
// resolution timelines, up to 2^20 points), each policy's state at its reserved peak (segments,
// blocks, the stacks that own it), and the advice. As one JSON document whose long series are
// packed (run-length zigzag varint deltas, zlib, base64; see encode_series) so a 300k-event trace stays small.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "replayer/replay_options.h"

namespace memreplay::results {

inline constexpr int kReportDataSchemaVersion = 1;

// Each value minus the one before, zigzag-encoded, as LEB128 varints, zlib-compressed, base64. A
// delta repeated k+1 times is written once: varint(zigzag * 2 + 1), then varint(k); a single one
// as varint(zigzag * 2).
std::string encode_series(const std::vector<uint64_t>& values);

// Throws InputError for a damaged trace or a bad policy spec.
nlohmann::json build_report_data(const ReplayOptions& base, const std::vector<std::string>& policies);

}  // namespace memreplay::results
