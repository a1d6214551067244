#include "results/policy_list.h"

#include <nlohmann/json.hpp>

#include "policies/registry.h"
#include "replayer/device_registry.h"
#include "replayer/sim/sim_device.h"

namespace memreplay::results {

nlohmann::json policy_list_json() {
  nlohmann::json out = {{"policies", nlohmann::json::array()},
                        {"devices", nlohmann::json::array()},
                        {"sim_device_memory", kH200TotalMemory}};
  for (const auto& p : PolicyRegistry::instance().policies())
    out["policies"].push_back(
        {{"name", p.name},
         {"description", p.description},
         {"options", p.options_help},
         {"reserves_up_front",
          p.reserves_up_front.empty() ? nlohmann::json(nullptr) : nlohmann::json(p.reserves_up_front)},
         {"models_torch_version",
          p.models_torch_version.empty() ? nlohmann::json(nullptr) : nlohmann::json(p.models_torch_version)}});
  for (const auto& d : DeviceRegistry::instance().devices())
    out["devices"].push_back({{"name", d.name}, {"description", d.description}});
  return out;
}

}  // namespace memreplay::results
