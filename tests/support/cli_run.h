// Running a program from a test (the memreplay binary above all): its exit status, and stdout and
// stderr apart (a JSON on stdout must parse while warnings go to stderr), or merged in the order
// they were written. The one runner of every test that starts a process through the shell.
#pragma once

#include <filesystem>
#include <string>

#include "tests/support/test_support.h"

namespace memreplay::testing {

struct CliRun {
  int status = -1;  // exit status; -1 when killed by a signal
  std::string out;  // stdout (and stderr too, when merged)
  std::string err;  // stderr, when kept apart
};

// The whole file, or "" when it cannot be read.
std::string slurp(const std::string& path);

// `command` through /bin/sh. With a `scratch_dir`, stderr goes through a file there and comes
// back in `err`; without one, it is merged into `out` (2>&1).
CliRun run_shell(const std::string& command, const std::filesystem::path& scratch_dir = {});

// The memreplay binary with `arguments` as a shell would split them; `environment`: VAR=VALUE
// words put before the command.
inline CliRun run_memreplay(const std::string& arguments, const std::filesystem::path& scratch_dir = {},
                            const std::string& environment = "") {
  return run_shell(environment + " " + std::string(MEMREPLAY_CLI) + " " + arguments, scratch_dir);
}

// A test with a scratch folder (TempDirTest) that runs memreplay there: run("replay " + trace).
class CliTest : public TempDirTest {
 protected:
  CliRun run(const std::string& arguments) { return run_memreplay(arguments, dir_); }
};

}  // namespace memreplay::testing
