#include "results/recommendation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "replayer/replay_runner.h"
#include "results/text_table.h"

namespace memreplay::results {

uint64_t CallRule::call_limit() const {
  return static_cast<uint64_t>(std::floor(max_call_ratio * double(std::max<uint64_t>(reference_calls, 1))));
}

CallRule call_rule_for(const ReplayOptions& base, const std::string& current_policy, const ReplayMetrics& current,
                       double max_call_ratio) {
  CallRule rule{current_policy, total_device_calls(current), false, max_call_ratio};
  if (!current.stopped_at_oom) return rule;
  ReplayOptions whole = base;
  whole.policy_spec = current_policy;
  whole.capacity.reset();
  whole.continue_after_oom = false;
  whole.timeline_points = 1;
  const ReplayMetrics uncapped = run_replay(whole);
  rule.reference_calls = total_device_calls(uncapped);
  rule.reference_partial = uncapped.stopped_at_oom;
  return rule;
}

Recommendation recommend(const std::vector<ReplayMetrics>& replays, const CallRule& rule) {
  Recommendation out;
  out.rule = rule;
  for (const auto& m : replays)
    out.standing.push_back(m.oom_at_event                              ? Standing::ran_out_of_memory
                           : total_device_calls(m) > rule.call_limit() ? Standing::too_many_calls
                                                                       : Standing::qualifies);
  for (size_t i = 0; i < replays.size(); ++i) out.ranking.push_back(i);
  std::stable_sort(out.ranking.begin(), out.ranking.end(), [&](size_t a, size_t b) {
    if (out.standing[a] != out.standing[b]) return out.standing[a] < out.standing[b];
    if (replays[a].reserved_peak != replays[b].reserved_peak)
      return replays[a].reserved_peak < replays[b].reserved_peak;
    return total_device_calls(replays[a]) < total_device_calls(replays[b]);
  });
  if (replays.size() > 1 && out.standing[out.ranking.front()] == Standing::qualifies) out.best = out.ranking.front();
  return out;
}

std::string star_rule_text(const CallRule& rule) {
  char ratio[32];
  std::snprintf(ratio, sizeof ratio, "%g", rule.max_call_ratio);
  return std::string("*: the lowest reserved peak without OOM among the policies making at most ") + ratio +
         "x the device calls of " + rule.current_policy + " (" + (rule.reference_partial ? "at least " : "") +
         format_count(rule.reference_calls) + " calls: at most " + format_count(rule.call_limit()) + ")";
}

const char* standing_name(Standing standing) {
  switch (standing) {
    case Standing::qualifies: return "qualifies";
    case Standing::ran_out_of_memory: return "ran_out_of_memory";
    case Standing::too_many_calls: return "too_many_calls";
  }
  return "";
}

nlohmann::json to_json(const CallRule& rule) {
  return {{"current_policy", rule.current_policy},
          {"reference_calls", rule.reference_calls},
          {"reference_partial", rule.reference_partial},
          {"max_call_ratio", rule.max_call_ratio},
          {"call_limit", rule.call_limit()},
          {"text", star_rule_text(rule)}};
}

std::string standing_text(Standing standing, const CallRule& rule) {
  switch (standing) {
    case Standing::qualifies: return "";
    case Standing::ran_out_of_memory: return "ran out of memory";
    case Standing::too_many_calls: return "over " + format_count(rule.call_limit()) + " device calls";
  }
  return "";
}

}  // namespace memreplay::results
