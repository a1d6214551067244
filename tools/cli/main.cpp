// memreplay: record GPU memory-allocation traces and replay them against allocator policies.
#include <iostream>
#include <string>

#include "proto/input_error.h"
#include "proto/version.h"
#include "tools/cli/command.h"
#include "tools/cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{
      "memreplay: replay GPU memory-allocation traces against allocator policies, offline.\n"
      "  memreplay record -o run.mrt -- python train.py  # any CUDA program, live\n"
      "  memreplay import snapshot.pickle -o run.mrt     # PyTorch snapshot or RMM log -> trace\n"
      "  memreplay info run.mrt                          # what the trace holds\n"
      "  memreplay replay run.mrt --policy pytorch:expandable_segments:True\n"
      "  memreplay compare run.mrt --policy pytorch --policy pytorch:max_split_size_mb:64\n"
      "  memreplay fit run.mrt --policy pytorch          # smallest GPU it fits on\n"
      "  memreplay check run.mrt --policy pytorch --baseline base.json  # CI gate: exit 1 on a regression",
      "memreplay"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(memreplay::kProducer));
#define MEMREPLAY_ADD_SUBCOMMAND(name) memreplay::cli::add_##name##_command(app);
  MEMREPLAY_SUBCOMMANDS(MEMREPLAY_ADD_SUBCOMMAND)
#undef MEMREPLAY_ADD_SUBCOMMAND
  try {
    memreplay::cli::load_environment_plugins();
    std::vector<std::string> arguments = memreplay::cli::normalize_json_arguments(argc, argv);
    std::vector<char*> pointers;
    for (auto& a : arguments) pointers.push_back(a.data());
    app.parse(static_cast<int>(pointers.size()), pointers.data());
  } catch (const CLI::ParseError& e) {
    const int status = app.exit(e);
    if (status != 0)
      for (const auto& report : memreplay::cli::parse_error_reporters) report(e.what());
    return status == 0 ? 0 : 2;
  } catch (const memreplay::InputError& e) {
    std::cerr << "memreplay: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "memreplay: internal error: " << e.what() << "\n";
    return 1;
  }
  return memreplay::cli::command_exit_status;
}
