// The report's timeline series, packed so that a page of millions of events stays small, paints
// from a coarse overview first and shows every exact value when zoomed in.
//
// A series of n values is stored at several resolutions ("levels"):
//   level 0:  the n values themselves                     (bucket of 1 event)
//   level k:  min and max of each bucket of 16^k events    (ceil(n / 16^k) buckets)
// built up to the first level of at most kTopLevelBuckets buckets. Each level is cut into chunks
// of kSeriesChunk entries, each chunk packed on its own (encode_series), so the page decodes only
// the chunks of the level and range it draws.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace memreplay::results {

inline constexpr size_t kSeriesChunk = size_t{1} << 16;
inline constexpr uint64_t kLevelFactor = 16;
inline constexpr size_t kTopLevelBuckets = 1024;

// Each value minus the one before (the first minus 0), zigzag-encoded, as LEB128 varints,
// zlib-compressed, base64. A delta repeated k+1 times is written once: varint(zigzag * 2 + 1),
// then varint(k); a single one as varint(zigzag * 2).
std::string encode_series(const std::vector<uint64_t>& values);

// {"n": n, "levels": [[chunk, ...], [{"min": chunk, "max": chunk}, ...], ...]}: level 0 as plain
// chunks of `exact` (which may differ from `values`, e.g. a difference from another series that
// packs smaller), levels 1.. as min/max chunks of `values`.
nlohmann::json encode_levels(const std::vector<uint64_t>& values, const std::vector<uint64_t>& exact);

// Level 0 only: chunks of `values` (what the page needs only at full zoom, e.g. the time axis).
nlohmann::json encode_chunks(const std::vector<uint64_t>& values);

}  // namespace memreplay::results
