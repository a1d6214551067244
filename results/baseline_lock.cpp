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
    fd_.reset(::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
    if (!fd_) throw InputError(path_ + ": cannot create the baseline's lock file: " + std::strerror(errno));
    int status;
    while ((status = ::flock(fd_.get(), LOCK_EX)) != 0 && errno == EINTR) {}
    if (status != 0) throw InputError(path_ + ": cannot lock the baseline: " + std::strerror(errno));
    if (still_named(fd_.get(), path_)) return;
    fd_.reset();  // locked a file its holder removed meanwhile: lock the one there now
  }
}

// The descriptor closes after this, so the file goes while still held: no one can lock it and
// think it current.
BaselineLock::~BaselineLock() { ::unlink(path_.c_str()); }

}  // namespace memreplay::results
