#include "results/baseline_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "proto/input_error.h"

namespace memreplay::results {
namespace {

// Whether the open file `fd` is still the one named `path` (its holder may have removed it).
bool still_named(int fd, const std::string& path) {
  struct stat held {
  }, named{};
  return ::fstat(fd, &held) == 0 && ::stat(path.c_str(), &named) == 0 && held.st_dev == named.st_dev &&
         held.st_ino == named.st_ino;
}

}  // namespace

BaselineLock::BaselineLock(const std::string& baseline_path) : path_(lock_path(baseline_path)) {
  for (;;) {
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw InputError(path_ + ": cannot create the baseline's lock file: " + std::strerror(errno));
    int status;
    while ((status = ::flock(fd_, LOCK_EX)) != 0 && errno == EINTR) {}
    if (status != 0) {
      const int error = errno;
      ::close(fd_);
      throw InputError(path_ + ": cannot lock the baseline: " + std::strerror(error));
    }
    if (still_named(fd_, path_)) return;
    ::close(fd_);  // locked a file its holder removed meanwhile: lock the one there now
  }
}

BaselineLock::~BaselineLock() {
  ::unlink(path_.c_str());  // while still held: no one can lock this file and think it current
  ::close(fd_);  // closing the last descriptor lets the flock go
}

}  // namespace memreplay::results
