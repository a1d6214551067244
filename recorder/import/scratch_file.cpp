#include "recorder/import/scratch_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "proto/input_error.h"

namespace memreplay {
namespace {

std::string scratch_dir() {
  const char* dir = std::getenv("TMPDIR");
  return dir != nullptr && *dir != '\0' ? dir : "/tmp";
}

}  // namespace

MappedBytes::MappedBytes(int fd, size_t bytes, const std::string& for_file) : bytes_(bytes) {
  if (bytes == 0) return;
  map_ = ::mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
  if (map_ == MAP_FAILED) {
    map_ = nullptr;
    throw InputError(for_file + ": cannot map: " + std::strerror(errno));
  }
  ::madvise(map_, bytes, MADV_SEQUENTIAL);  // read ahead; readers go front to back or back to front
}

MappedBytes::~MappedBytes() {
  if (map_ != nullptr) ::munmap(map_, bytes_);
}

MappedBytes::MappedBytes(MappedBytes&& other) noexcept
    : map_(std::exchange(other.map_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

MappedBytes& MappedBytes::operator=(MappedBytes&& other) noexcept {
  if (this != &other) {
    if (map_ != nullptr) ::munmap(map_, bytes_);
    map_ = std::exchange(other.map_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void MappedBytes::release(size_t begin, size_t end) const {
  if (map_ == nullptr) return;
  static const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  end = std::min(end, bytes_);
  const size_t first = (begin + page - 1) / page * page;
  const size_t last = end == bytes_ ? end : end / page * page;  // the map's last page may be partial
  if (first < last) ::madvise(static_cast<char*>(map_) + first, last - first, MADV_DONTNEED);
}

ScratchFile::ScratchFile(const std::string& for_file) : for_file_(for_file) {
  const std::string dir = scratch_dir();
#ifdef O_TMPFILE
  fd_ = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
#endif
  if (fd_ < 0) {
    std::string name = dir + "/memreplay-scratch-XXXXXX";
    fd_ = ::mkstemp(name.data());
    if (fd_ >= 0) ::unlink(name.c_str());
  }
  if (fd_ < 0)
    throw InputError(for_file + ": cannot create a scratch file in " + dir + ": " + std::strerror(errno));
}

ScratchFile::~ScratchFile() {
  if (fd_ >= 0) ::close(fd_);
}

void ScratchFile::append(const void* bytes, size_t n) {
  const char* p = static_cast<const char*>(bytes);
  while (n > 0) {
    const ssize_t w = ::write(fd_, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0)
      throw InputError(for_file_ + ": cannot write scratch data under " + scratch_dir() + ": " +
                       std::strerror(w < 0 ? errno : ENOSPC));
    p += w;
    n -= static_cast<size_t>(w);
    size_ += static_cast<uint64_t>(w);
  }
}

MappedBytes ScratchFile::map() const { return MappedBytes(fd_, static_cast<size_t>(size_), for_file_); }

}  // namespace memreplay
