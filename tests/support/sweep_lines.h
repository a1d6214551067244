// Reading a sweep's JSON Lines in tests: every line parsed, the run time (the one field that
// differs between two runs of the same task) dropped, the task keys counted.
#pragma once

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "results/sweep_task.h"
#include "tests/support/test_support.h"

namespace memreplay::testing {

// Every line of a JSON Lines file, parsed; a line that does not parse fails the test.
inline std::vector<nlohmann::json> read_json_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

// The line without the replay's wall-clock seconds, which vary from run to run.
inline nlohmann::json without_run_time(nlohmann::json line) {
  line.erase("replay_seconds");
  return line;
}

// How many lines each task key has.
inline std::map<std::string, int> key_counts(const std::vector<nlohmann::json>& lines) {
  std::map<std::string, int> counts;
  for (const auto& line : lines) ++counts[results::task_key_of_line(line)];
  return counts;
}

// Each task's line by its key, the run time dropped (a key twice fails the test).
inline std::map<std::string, nlohmann::json> lines_by_key(const std::vector<nlohmann::json>& lines) {
  std::map<std::string, nlohmann::json> out;
  for (const auto& line : lines) {
    const bool added = out.emplace(results::task_key_of_line(line), without_run_time(line)).second;
    EXPECT_TRUE(added) << "twice: " << results::task_key_of_line(line);
  }
  return out;
}

// The real traces imported, each by its name (gpt2_train.default, ...): every one of
// tests/data/real/traces; fails the test when there are none.
inline std::vector<std::pair<std::string, std::string>> real_traces() {
  std::vector<std::pair<std::string, std::string>> out;
  real_data_path("traces");  // throws, naming the folder, when it is missing
  for (const auto& name : real_data_names("traces", ".pickle.xz")) out.emplace_back(name, imported_trace(name));
  EXPECT_EQ(out.size(), 9u) << "the real traces in " << real_data_dir();
  return out;
}

}  // namespace memreplay::testing
