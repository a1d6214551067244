#include "results/compare.h"

#include <nlohmann/json.hpp>

#include "policies/registry.h"
#include "proto/schema_versions.h"
#include "results/metrics_table.h"

namespace memreplay::results {

std::vector<std::string> compare_policy_specs(const std::vector<std::string>& asked) {
  std::vector<std::string> specs;
  for (const auto& spec : asked.empty() ? std::vector<std::string>{"all"} : asked) {
    if (spec != "all") {
      specs.push_back(spec);
      continue;
    }
    for (const PolicyInfo& info : PolicyRegistry::instance().policies()) specs.push_back(info.name);
  }
  return specs;
}

std::string compare_current_setting(const std::vector<std::string>& asked) {
  return asked.empty() || asked.front() == "all" ? "pytorch" : asked.front();
}

Recommendation compare_recommendation(const ReplayOptions& base, const std::vector<std::string>& asked,
                                      const std::vector<std::string>& specs, const std::vector<ReplayMetrics>& rows,
                                      double max_call_ratio) {
  const std::string current = compare_current_setting(asked);
  size_t current_row = 0;
  while (current_row + 1 < rows.size() && specs[current_row] != current) ++current_row;
  const CallRule rule = call_rule_for(base, specs[current_row], rows[current_row], max_call_ratio);
  return recommend(rows, rule);
}

nlohmann::json compare_row_json(const ReplayMetrics& m, Standing standing) {
  nlohmann::json row = to_json(m);
  row["reserved_over_requested"] = m.requested_peak == 0 ? 1.0 : double(m.reserved_peak) / double(m.requested_peak);
  row["failed"] = m.oom_at_event.has_value();
  row["standing"] = standing_name(standing);
  return row;
}

nlohmann::json compare_json(const ReplayOptions& base, const std::vector<std::string>& specs,
                            const std::vector<ReplayMetrics>& rows, const Recommendation& recommendation) {
  nlohmann::json all = nlohmann::json::array();
  for (size_t i = 0; i < rows.size(); ++i) all.push_back(compare_row_json(rows[i], recommendation.standing[i]));
  const CallRule& rule = recommendation.rule;
  return {{"schema", "memreplay-compare"},
          {"schema_version", schema::kCompare},
          {"metrics_schema_version", schema::kMetrics},
          {"trace", base.trace_path},
          {"capacity", base.capacity ? nlohmann::json(*base.capacity) : nlohmann::json(nullptr)},
          {"options",
           {{"device", base.device_spec},
            {"trace_device", base.trace_device},
            {"lenient", base.lenient},
            {"keep_going", base.continue_after_oom},
            {"time_operations", base.time_operations}}},
          {"recommended", recommendation.best ? nlohmann::json(specs[*recommendation.best]) : nlohmann::json(nullptr)},
          {"call_rule", to_json(rule)},
          {"definitions",
           {{"reserved_over_requested", "reserved_peak / requested_peak"},
            {"fragmentation_at_peak",
             "1 - allocated/reserved at the peak: of the moments reserved stands at its peak, the first with the most "
             "allocated (peak_trace_event)"},
            {"fragmentation_at_peak_max", "1 - allocated/reserved at the peak's least-used moment"},
            {"free_fragmentation_at_peak", "1 - largest free range / all free bytes at that moment"},
            {"device_calls", kDeviceCallsDefinition},
            {"complete", kCompleteDefinition},
            {"failed", "the replay ran out of memory: without keep_going its numbers stop at oom_at_event"},
            {"standing",
             "qualifies for the star, or why not: ran_out_of_memory, too_many_calls (over call_rule.call_limit)"}}},
          {"results", all}};
}

}  // namespace memreplay::results
