#include "tests/support/cli_run.h"
#include "tests/support/bounded_run.h"
#include "tests/support/sanitizer.h"

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace memreplay::testing {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

CliRun run_shell(const std::string& command, const std::filesystem::path& scratch_dir) {
  const std::string err_path = scratch_dir.empty() ? "" : (scratch_dir / "stderr.txt").string();
  const std::string line = command + (err_path.empty() ? " 2>&1" : " 2>'" + err_path + "'");
  CliRun run;
  FILE* pipe = popen(line.c_str(), "r");
  if (pipe == nullptr) return run;
  std::array<char, 4096> buffer{};
  while (size_t n = fread(buffer.data(), 1, buffer.size(), pipe)) run.out.append(buffer.data(), n);
  const int raw = pclose(pipe);
  run.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  if (!err_path.empty()) run.err = slurp(err_path);
  return run;
}

constexpr bool kSanitized = MEMREPLAY_TEST_UNDER_ASAN;

CliRun run_memreplay_bounded(const std::string& arguments, const std::filesystem::path& scratch_dir) {
  // Under the sanitizer: its shadow needs the address space, and its code is several times slower.
  const std::string limit = kSanitized ? "" : "ulimit -v 1048576; ";
  const std::string seconds = kSanitized ? "60" : "10";
  return run_shell("sh -c '" + limit + "exec timeout " + seconds + " " + MEMREPLAY_CLI + " " + arguments + "'",
                   scratch_dir);
}

}  // namespace memreplay::testing
