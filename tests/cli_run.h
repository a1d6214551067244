// Running the memreplay binary from a test: its exit status, and stdout and stderr apart (a JSON
// on stdout must parse while warnings go to stderr).
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/test_support.h"

namespace memreplay::testing {

struct CliRun {
  int status = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// `arguments` as a shell would split them; stderr goes through a file next to `scratch_dir`.
// `environment`: VAR=VALUE words put before the command.
inline CliRun run_memreplay(const std::string& arguments, const std::filesystem::path& scratch_dir,
                            const std::string& environment = "") {
  const std::string err_path = (scratch_dir / "stderr.txt").string();
  const std::string command = environment + " " + std::string(MEMREPLAY_CLI) + " " + arguments + " 2>" + err_path;
  CliRun r;
  FILE* pipe = popen(command.c_str(), "r");
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof buffer, pipe)) r.out.append(buffer, n);
  const int raw = pclose(pipe);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  r.err = slurp(err_path);
  return r;
}

}  // namespace memreplay::testing
