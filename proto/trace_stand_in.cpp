#include "proto/trace_stand_in.h"

#include <fcntl.h>

#include <map>
#include <mutex>
#include <utility>

namespace memreplay {
namespace {

std::mutex mutex;
std::map<std::pair<dev_t, ino_t>, int> stand_ins;

}  // namespace

void register_trace_stand_in(dev_t device, ino_t inode, int fd) {
  std::lock_guard lock(mutex);
  stand_ins[{device, inode}] = fd;
}

void unregister_trace_stand_in(dev_t device, ino_t inode) {
  std::lock_guard lock(mutex);
  stand_ins.erase({device, inode});
}

int open_trace_stand_in(dev_t device, ino_t inode) {
  std::lock_guard lock(mutex);
  const auto it = stand_ins.find({device, inode});
  // A duplicate shares the file offset, which TraceReader never uses (it reads with pread).
  return it == stand_ins.end() ? -1 : ::fcntl(it->second, F_DUPFD_CLOEXEC, 0);
}

}  // namespace memreplay
