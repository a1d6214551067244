// memreplay: record GPU memory-allocation traces and replay them against allocator policies.
#include <iostream>
#include <string>

#include "base/text_escape.h"
#include "proto/input_error.h"
#include "proto/version.h"
#include "tools/cli/command.h"
#include "tools/cli/commands.h"
#include "tools/cli/help_format.h"

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
  app.formatter(memreplay::cli::help_formatter());  // before the subcommands, which take it from here
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(memreplay::kProducer));
#define MEMREPLAY_ADD_SUBCOMMAND(name) memreplay::cli::add_##name##_command(app);
  MEMREPLAY_SUBCOMMANDS(MEMREPLAY_ADD_SUBCOMMAND)
#undef MEMREPLAY_ADD_SUBCOMMAND
  try {
    // MEMREPLAY_PLUGINS is loaded by the commands that replay (tools/cli/command.h): --help works
    // whatever it names.
    std::vector<std::string> arguments = memreplay::cli::normalize_json_arguments(argc, argv);
    std::vector<char*> pointers;
    for (auto& a : arguments) pointers.push_back(a.data());
    app.parse(static_cast<int>(pointers.size()), pointers.data());
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    for (const auto& report : memreplay::cli::parse_error_reporters) report(e.what());
    std::cerr << memreplay::cli::parse_error_line(app, e) << "\n";
    return 2;
  } catch (const memreplay::InputError& e) {
    std::cerr << "memreplay: " << memreplay::terminal_safe(e.what()) << "\n";  // one line, whatever it quotes
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "memreplay: internal error: " << memreplay::terminal_safe(e.what()) << "\n";
    return 1;
  }
  return memreplay::cli::command_exit_status;
}
