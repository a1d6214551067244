// memreplay policies: every registered policy and device, with their options.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "policies/registry.h"
#include "replayer/device_registry.h"
#include "tools/cli/command.h"
#include "tools/cli/commands.h"
#include "tools/cli/text_format.h"

namespace memreplay::cli {

void add_policies_command(CLI::App& app) {
  auto* command = app.add_subcommand("policies",
                                     "List the allocator policies and devices replay can use.\n"
                                     "  memreplay policies");
  add_plugin_option(*command);
  auto json = std::make_shared<std::string>();
  add_json_option(*command, *json, "the policies and devices");
  command->callback([json] {
    load_environment_plugins();
    if (!json->empty()) {
      nlohmann::json out = {{"policies", nlohmann::json::array()}, {"devices", nlohmann::json::array()}};
      for (const auto& p : PolicyRegistry::instance().policies())
        out["policies"].push_back({{"name", p.name}, {"description", p.description}, {"options", p.options_help}});
      for (const auto& d : DeviceRegistry::instance().devices())
        out["devices"].push_back({{"name", d.name}, {"description", d.description}});
      write_json(out, *json);
      if (*json == "-") return;
    }
    std::printf("Policies (--policy NAME[:OPTIONS]):\n");
    for (const auto& p : PolicyRegistry::instance().policies())
      std::printf("  %-12s %s\n  %-12s options: %s\n", p.name.c_str(), p.description.c_str(), "",
                  p.options_help.c_str());
    std::printf("Devices (--device NAME[:INDEX]):\n");
    for (const auto& d : DeviceRegistry::instance().devices())
      std::printf("  %-12s %s\n", d.name.c_str(), d.description.c_str());
  });
}

}  // namespace memreplay::cli
