// One task of a fleet sweep: one trace replayed under one policy at one capacity, and its result
// as one JSON line. `memreplay sweep` runs these on every core, the Python API (memreplay.dask)
// runs the same function on Dask workers, so a task's line is the same wherever it ran.
//
// The line is one JSON object: "name", "trace", "policy", "capacity" (null: uncapped, bytes, or
// "fit"), "status" ("ok" or "error"), then
//   ok:    every field of `replay --json` for the same replay (replayer/metrics.cpp), the timeline
//          empty unless asked for; a "fit" task carries the uncapped replay's fields (the ceiling
//          of its search) and "fit": the search's outcome as `fit --json` gives it;
//   error: "error", one line naming the trace and what went wrong.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "results/fit_scan.h"

namespace memreplay::results {

// Where a task caps the replay: not at all, at a byte count, or the smallest fitting capacity
// (fit_scan.h's search).
struct SweepCapacity {
  enum class Kind { uncapped, bytes, fit };
  Kind kind = Kind::uncapped;
  uint64_t bytes = 0;  // for Kind::bytes

  static SweepCapacity fit() { return {Kind::fit, 0}; }
  static SweepCapacity at(uint64_t bytes) { return {Kind::bytes, bytes}; }
  friend bool operator==(const SweepCapacity&, const SweepCapacity&) = default;
};

// "none", "fit", or a size as results::parse_bytes reads it ("40GiB", "80GB"; plain bytes, with
// `warning` set to say it has no unit). Throws InputError naming --capacity and the text.
SweepCapacity parse_sweep_capacity(std::string_view text, std::string* warning = nullptr);
// Each of `lists` split at its commas ("none,fit,40GiB"); no list at all is {none}. Warnings for
// sizes without a unit are appended to `warnings`.
std::vector<SweepCapacity> parse_sweep_capacities(const std::vector<std::string>& lists,
                                                  std::vector<std::string>* warnings = nullptr);
// "none", "fit" or the byte count: the capacity's part of a task key.
std::string capacity_key(const SweepCapacity& capacity);
// The JSON "capacity" of a line: null, "fit" or the byte count.
nlohmann::json capacity_json(const SweepCapacity& capacity);
// The inverse of capacity_json; throws InputError for anything else.
SweepCapacity capacity_from_json(const nlohmann::json& value);

struct SweepTask {
  std::string trace_path;
  std::string name;  // the trace's name in the fleet (unique there); the path when none is given
  std::string policy;  // NAME[:OPTIONS]
  SweepCapacity capacity;
};

// What every task of a sweep shares.
struct SweepSettings {
  FitSearch fit;  // as `fit --resolution` and `--grid`, with their defaults
  bool timeline = false;  // keep replay's timeline in the line (1024 points: ~40 KB a line)
  bool lenient = false;  // as --lenient
};

// What identifies a task in a sweep's output: name, policy and capacity_key, tab-separated. Two
// lines with the same key are the same task.
std::string task_key(std::string_view name, std::string_view policy, std::string_view capacity_key);
std::string task_key(const SweepTask& task);
// The key of a result line (its name, policy and capacity); throws InputError when it has none.
std::string task_key_of_line(const nlohmann::json& line);

// A stable 64-bit hash (FNV-1a) of a key, the same on every machine and build: it decides a
// task's shard.
uint64_t stable_hash(std::string_view key, uint64_t seed = 0);

// Runs the task and returns its line without the newline. Never throws for a bad trace or
// policy options: those become the error line.
std::string run_sweep_task(const SweepTask& task, const SweepSettings& settings = {});
nlohmann::json sweep_task_result(const SweepTask& task, const SweepSettings& settings = {});
// A result as its line: compact JSON, bytes that are not UTF-8 (in a path, say) replaced.
std::string line_text(const nlohmann::json& result);

}  // namespace memreplay::results
