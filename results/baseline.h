// The committed baseline of `memreplay check`: the numbers of each trace × policy from a run that
// was accepted, the --capacity they ran under and the tolerances. A file from a pull request or
// a colleague's machine, so untrusted input: read within bounds, every field checked, and what
// check writes is always a baseline check reads back the same.
//
//   {"schema": "memreplay-check-baseline", "schema_version": 2, "capacity": null | BYTES,
//    "tolerances": {METRIC: VALUE, ...},
//    "entries": [{"trace": NAME, "policy": SPEC, "metrics": {METRIC: VALUE, ...}}, ...]}
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "results/check_metrics.h"

namespace memreplay::results {

// A baseline for thousands of trace × policy entries fits in well under 1 MiB; the nesting is 4
// levels deep (document, entries, entry, metrics).
inline constexpr uint64_t kMaxBaselineBytes = uint64_t{16} << 20;
inline constexpr size_t kMaxBaselineDepth = 8;

struct BaselineEntry {
  std::string trace;  // the trace's name: --name, NAME=PATH, or its file name without .mrt
  std::string policy;  // the spec as given to --policy
  MetricValues values;
};

struct Baseline {
  std::optional<uint64_t> capacity;  // the --capacity the replays ran under
  std::map<std::string, double> tolerances;  // written by --update-baseline, overridable
  std::vector<BaselineEntry> entries;

  const BaselineEntry* find(const std::string& trace, const std::string& policy) const;
  // Replaces the entry of the same trace and policy, or adds it at the end.
  void put(const BaselineEntry& entry);
};

// Reads a baseline. InputError naming the file for anything but a baseline of a version this
// memreplay reads, with every value in range: the byte offset for a fault of size, nesting or
// syntax, the field's path ("entries[3].metrics.reserved_peak") for a fault of content.
Baseline load_baseline(const std::string& path);
// The same from text (fuzzing, tests); `path` names it in messages.
Baseline parse_baseline(std::string_view text, const std::string& path);
Baseline baseline_from_json(const nlohmann::json& document, const std::string& path);

nlohmann::json to_json(const Baseline& baseline);
// The file's text: to_json, indented, and a newline.
std::string baseline_text(const Baseline& baseline);

// Why a tolerance cannot be used (not finite, negative), or nullopt.
std::optional<std::string> tolerance_problem(double value);

}  // namespace memreplay::results
