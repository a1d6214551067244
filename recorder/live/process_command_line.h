// The command line of this process, for a live trace's header.
#pragma once

#include <string>

namespace memreplay {

// /proc/self/cmdline with its NUL separators as spaces; empty where it cannot be read.
std::string process_command_line();

}  // namespace memreplay
