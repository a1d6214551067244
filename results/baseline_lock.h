// Exclusive use of a baseline for a read-modify-write (check --update-baseline): an advisory
// flock on BASELINE.lock beside it, held from before the baseline is read until after it is
// written, so that concurrent updates follow one another and none loses another's entries.
// The holder removes the lock file as it lets go; a waiter that then holds a removed file sees
// so and locks the file now at that path instead, so that two holders never overlap.
// SIGINT, SIGTERM or SIGHUP while it is held remove it too (base/temp_file_cleanup.h): an
// interrupted update leaves nothing beside the baseline. Only SIGKILL can leave the file, and
// the next update takes it over and removes it.
#pragma once

#include <optional>
#include <string>

#include "base/temp_file_cleanup.h"
#include "base/unique_fd.h"

namespace memreplay::results {

class BaselineLock {
 public:
  // Blocks until the lock is held. InputError naming the lock file when it cannot be made.
  explicit BaselineLock(const std::string& baseline_path);
  ~BaselineLock();

  static std::string lock_path(const std::string& baseline_path) { return baseline_path + ".lock"; }

 private:
  std::string path_;
  UniqueFd fd_;  // closing it lets the flock go
  std::optional<TempFileGuard> removed_on_signal_;  // armed only while held: never another's file
};

}  // namespace memreplay::results
