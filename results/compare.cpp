#include "results/compare.h"

#include <nlohmann/json.hpp>

#include "policies/registry.h"
#include "proto/schema_versions.h"

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

nlohmann::json compare_row_json(const ReplayMetrics& m) {
  nlohmann::json row = to_json(m);
  row["reserved_over_requested"] = m.requested_peak == 0 ? 1.0 : double(m.reserved_peak) / double(m.requested_peak);
  row["failed"] = m.oom_at_event.has_value();
  return row;
}

nlohmann::json compare_json(const ReplayOptions& base, const std::vector<ReplayMetrics>& rows) {
  nlohmann::json all = nlohmann::json::array();
  for (const auto& m : rows) all.push_back(compare_row_json(m));
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
          {"definitions",
           {{"reserved_over_requested", "reserved_peak / requested_peak"},
            {"fragmentation_at_peak", "1 - allocated/reserved at the moment reserved peaked"},
            {"free_fragmentation_at_peak", "1 - largest free range / all free bytes at that moment"},
            {"failed", "the replay ran out of memory: its numbers stop at oom_at_event"}}},
          {"results", all}};
}

}  // namespace memreplay::results
