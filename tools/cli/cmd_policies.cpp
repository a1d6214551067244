// memreplay policies: every registered policy and device, with their options.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "base/units.h"
#include "policies/registry.h"
#include "replayer/device_registry.h"
#include "replayer/sim/sim_device.h"
#include "results/policy_list.h"
#include "results/text_table.h"
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
      write_json(results::policy_list_json(), *json);
      if (*json == "-") return;
    }
    std::string text = "Policies (--policy NAME[:OPTIONS]):\n";
    const auto line = [&](const std::string& head, const std::string& body) {
      char name[32];
      std::snprintf(name, sizeof name, "  %-12s ", head.c_str());
      text += results::wrap_text(name + body, results::kTableWidth, std::string(15, ' '));
    };
    for (const auto& p : PolicyRegistry::instance().policies()) {
      line(p.name, p.description);
      line("", "options: " + p.options_help);
      if (!p.reserves_up_front.empty()) line("", "reserves up front: " + p.reserves_up_front);
      if (!p.models_torch_version.empty())
        line("", "models PyTorch " + p.models_torch_version +
                     "; other releases may decide otherwise, and no ground truth of theirs is here "
                     "(docs/pytorch-versions.md)");
    }
    text += "Devices (--device NAME[:INDEX]):\n";
    for (const auto& d : DeviceRegistry::instance().devices()) line(d.name, d.description);
    text += results::wrap_text("The simulated device (sim) has " + format_bytes(kH200TotalMemory) +
                                   " (an H200's memory), or the memory of the GPU a trace recorded when the trace "
                                   "says; --capacity caps what the process may hold. A policy that reserves up front "
                                   "takes its share of that.",
                               results::kTableWidth, "");
    std::fputs(text.c_str(), stdout);
  });
}

}  // namespace memreplay::cli
