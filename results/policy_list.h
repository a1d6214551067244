// What `memreplay policies --json` writes (and memreplay.policies() returns the policies of):
// every registered policy (plugins loaded so far included) and device.
#pragma once

#include <nlohmann/json_fwd.hpp>

namespace memreplay::results {

// {"policies": [{name, description, options, reserves_up_front, models_torch_version}, ...],
//  "devices": [{name, description}, ...], "sim_device_memory": bytes}
nlohmann::json policy_list_json();

}  // namespace memreplay::results
