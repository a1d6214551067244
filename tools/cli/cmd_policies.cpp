// memreplay policies: every registered policy and device, with their options.
#include <cstdio>

#include "policies/registry.h"
#include "replayer/device_registry.h"
#include "tools/cli/command.h"
#include "tools/cli/commands.h"

namespace memreplay::cli {

void add_policies_command(CLI::App& app) {
  auto* command = app.add_subcommand("policies", "List the allocator policies and devices replay can use.\n"
                                                 "  memreplay policies");
  add_plugin_option(*command);
  command->callback([] {
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
