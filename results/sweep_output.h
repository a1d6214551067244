// A sweep's output, JSON Lines: each task's line appended whole with one write() to a file opened
// O_APPEND, so a process killed at any moment leaves whole lines and at most one torn last line;
// and, to resume, the tasks a file already holds.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/unique_fd.h"

namespace memreplay::results {

// Calls visit(line) for every whole line of a sweep output, parsed; blank lines are skipped. A
// last line without its newline is torn (its writer was killed mid-write): not visited, and its
// bytes are returned. Throws InputError naming the file, the line and its byte offset for a line
// that is not JSON, or that visit() throws for (its message appended).
uint64_t for_each_result_line(const std::string& path, const std::function<void(const nlohmann::json&)>& visit);

// The tasks an output file holds, by their keys' hashes (16 bytes a task, however long the key:
// a million-task file costs 16 MB).
class DoneTasks {
 public:
  // Reads every line of `path` (none when it does not exist). A last line without its newline is
  // torn (the writer was killed mid-write): it is not a task, and with `cut_torn_tail` it is cut
  // off the file, so the next line appended starts on a line of its own. Throws InputError naming
  // the file, the line and its byte offset for a whole line that is not a sweep result.
  static DoneTasks read(const std::string& path, bool cut_torn_tail);

  bool contains(std::string_view task_key) const;
  size_t size() const { return hashes_.size(); }
  uint64_t torn_bytes() const { return torn_bytes_; }  // cut (or left) after the last whole line

 private:
  using Hash = std::pair<uint64_t, uint64_t>;  // two independent 64-bit hashes: no collisions in practice
  static Hash hash_of(std::string_view key);
  std::vector<Hash> hashes_;  // sorted
  uint64_t torn_bytes_ = 0;
};

// Where lines go: a file (created if missing, appended to) or stdout ("" or "-"). Thread-safe:
// each line is written whole before the next starts.
class ResultLines {
 public:
  explicit ResultLines(const std::string& path);

  // Appends `line` and a newline in one write() (more only if the kernel writes part of it).
  // Throws InputError naming the file when it cannot be written.
  void write(std::string_view line);

 private:
  std::string path_;
  UniqueFd file_;  // none for stdout
  std::mutex mutex_;
  std::string buffer_;
};

}  // namespace memreplay::results
