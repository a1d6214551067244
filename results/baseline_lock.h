// Exclusive use of a baseline for a read-modify-write (check --update-baseline): an advisory
// flock on BASELINE.lock beside it, held from before the baseline is read until after it is
// written, so that concurrent updates follow one another and none loses another's entries.
// The holder removes the lock file as it lets go; a waiter that then holds a removed file sees
// so and locks the file now at that path instead, so that two holders never overlap.
#pragma once

#include <string>

namespace memreplay::results {

class BaselineLock {
 public:
  // Blocks until the lock is held. InputError naming the lock file when it cannot be made.
  explicit BaselineLock(const std::string& baseline_path);
  ~BaselineLock();
  BaselineLock(const BaselineLock&) = delete;
  BaselineLock& operator=(const BaselineLock&) = delete;

  static std::string lock_path(const std::string& baseline_path) { return baseline_path + ".lock"; }

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace memreplay::results
