#include "results/baseline_lock.h"

#include <fcntl.h>
#include <signal.h>
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

// Holds back SIGINT, SIGTERM and SIGHUP for a few system calls, so that the lock file is never
// ours without its guard (left behind) nor guarded once it may be another's (removed under it).
class SignalsHeldBack {
 public:
  SignalsHeldBack() {
    sigset_t fatal;
    sigemptyset(&fatal);
    for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&fatal, s);
    ::pthread_sigmask(SIG_BLOCK, &fatal, &previous_);
  }
  ~SignalsHeldBack() { ::pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }
  SignalsHeldBack(const SignalsHeldBack&) = delete;
  SignalsHeldBack& operator=(const SignalsHeldBack&) = delete;

 private:
  sigset_t previous_;
};

}  // namespace

BaselineLock::BaselineLock(const std::string& baseline_path) : path_(lock_path(baseline_path)) {
  for (;;) {
    {
      // Uncontended (the usual case): create, lock and guard with no moment in between.
      SignalsHeldBack held_back;
      fd_.reset(::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
      if (!fd_) throw InputError(path_ + ": cannot create the baseline's lock file: " + std::strerror(errno));
      if (::flock(fd_.get(), LOCK_EX | LOCK_NB) == 0 && still_named(fd_.get(), path_)) {
        removed_on_signal_.emplace(path_);
        return;
      }
    }
    // Another update holds it: wait with signals let through (the file is the holder's).
    int status;
    while ((status = ::flock(fd_.get(), LOCK_EX)) != 0 && errno == EINTR) {}
    if (status != 0) throw InputError(path_ + ": cannot lock the baseline: " + std::strerror(errno));
    SignalsHeldBack held_back;
    if (still_named(fd_.get(), path_)) {
      removed_on_signal_.emplace(path_);
      return;
    }
    fd_.reset();  // locked a file its holder removed meanwhile: lock the one there now
  }
}

// The descriptor closes after this, so the file goes while still held: no one can lock it and
// think it current. The guard goes first, with signals held back, so that a signal never
// removes a file a next holder made at the same path.
BaselineLock::~BaselineLock() {
  SignalsHeldBack held_back;
  removed_on_signal_.reset();
  ::unlink(path_.c_str());
}

}  // namespace memreplay::results
