#include "results/sweep_output.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "proto/input_error.h"
#include "results/sweep_task.h"

namespace memreplay::results {

DoneTasks::Hash DoneTasks::hash_of(std::string_view key) { return {stable_hash(key, 0), stable_hash(key, 1)}; }

uint64_t for_each_result_line(const std::string& path, const std::function<void(const nlohmann::json&)>& visit) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot read the sweep results");
  std::string line;
  uint64_t whole_bytes = 0;  // through the last newline
  for (uint64_t number = 1; std::getline(in, line); ++number) {
    if (in.eof()) break;  // no newline after it: torn
    const uint64_t offset = whole_bytes;
    whole_bytes += line.size() + 1;
    if (line.empty()) continue;
    try {
      visit(nlohmann::json::parse(line));
    } catch (const std::exception& e) {
      throw InputError(path + ": line " + std::to_string(number) + " (byte " + std::to_string(offset) +
                       "): not a sweep result line: " + e.what());
    }
  }
  if (in.bad()) throw InputError(path + ": reading the sweep results failed");
  return std::filesystem::file_size(path) - whole_bytes;
}

DoneTasks DoneTasks::read(const std::string& path, bool cut_torn_tail) {
  DoneTasks done;
  std::error_code missing;
  if (!std::filesystem::exists(path, missing)) return done;
  done.torn_bytes_ = for_each_result_line(
      path, [&](const nlohmann::json& line) { done.hashes_.push_back(hash_of(task_key_of_line(line))); });
  if (cut_torn_tail && done.torn_bytes_ > 0)
    std::filesystem::resize_file(path, std::filesystem::file_size(path) - done.torn_bytes_);
  std::sort(done.hashes_.begin(), done.hashes_.end());
  done.hashes_.erase(std::unique(done.hashes_.begin(), done.hashes_.end()), done.hashes_.end());
  return done;
}

bool DoneTasks::contains(std::string_view task_key) const {
  return std::binary_search(hashes_.begin(), hashes_.end(), hash_of(task_key));
}

ResultLines::ResultLines(const std::string& path) : path_(path.empty() ? "-" : path) {
  if (path_ == "-") return;
  file_.reset(::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  if (!file_) throw InputError(path_ + ": cannot open the sweep output: " + std::strerror(errno));
}

void ResultLines::write(std::string_view line) {
  std::lock_guard lock(mutex_);
  buffer_.assign(line);
  buffer_.push_back('\n');
  const int fd = file_ ? file_.get() : STDOUT_FILENO;
  for (size_t written = 0; written < buffer_.size();) {
    const ssize_t n = ::write(fd, buffer_.data() + written, buffer_.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw InputError(path_ + ": cannot write the sweep output: " + std::strerror(errno));
    written += static_cast<size_t>(n);
  }
}

}  // namespace memreplay::results
