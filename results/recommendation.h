// Which of several replays of one trace to recommend (the star in compare's and the report's
// tables, advise's first setting): one rule, here, for every command and the Python API.
//
// The rule weighs both costs. A replay qualifies when it did not run out of memory and its device
// calls (total_device_calls) stay within `max_call_ratio` times the current setting's (the first
// policy given; `pytorch` for `--policy all`); the star goes to the lowest reserved peak among
// those that qualify, ties to fewer device calls, then to the earlier row. A single replay gets no
// star: there is nothing to choose between.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "replayer/metrics.h"
#include "replayer/replay_options.h"

namespace memreplay::results {

inline constexpr double kDefaultMaxCallRatio = 4.0;

struct CallRule {
  std::string current_policy;  // whose device calls are the reference
  uint64_t reference_calls = 0;  // its device calls over the whole trace
  bool reference_partial = false;  // even without a cap it ran out of memory: a lower bound
  double max_call_ratio = kDefaultMaxCallRatio;
  // The most device calls a replay may make and qualify: ratio x the reference (at least 1 call).
  uint64_t call_limit() const;
};

// In rank order: a replay that fits, even with too many calls, ranks before one that does not.
enum class Standing { qualifies, too_many_calls, ran_out_of_memory };

struct Recommendation {
  std::optional<size_t> best;  // index of the starred replay
  std::vector<size_t> ranking;  // every replay, best first: qualifying, then too many calls, then OOM
  std::vector<Standing> standing;  // per replay, in the given order
  CallRule rule;
};

// The rule's reference from the current setting's replay: its device calls, or, when that replay
// stopped at an OOM (under a cap), those of one more replay of it without the cap (all its calls).
CallRule call_rule_for(const ReplayOptions& base, const std::string& current_policy, const ReplayMetrics& current,
                       double max_call_ratio = kDefaultMaxCallRatio);

Recommendation recommend(const std::vector<ReplayMetrics>& replays, const CallRule& rule);

// The line to print under a table: what the star means, with the numbers of this rule.
std::string star_rule_text(const CallRule& rule);
// The standing as the JSON documents name it: qualifies, too_many_calls, ran_out_of_memory.
const char* standing_name(Standing standing);
// The rule as compare --json and advise --json give it: its reference, ratio, limit and text.
nlohmann::json to_json(const CallRule& rule);
// Why a replay is not starred ("" when it qualifies).
std::string standing_text(Standing standing, const CallRule& rule);

}  // namespace memreplay::results
