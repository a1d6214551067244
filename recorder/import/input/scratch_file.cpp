#include "recorder/import/input/scratch_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>

#include "base/temp_file_cleanup.h"
#include "proto/input_error.h"

namespace memreplay {
namespace {

// A mapped file that shrinks while it is read (another process truncates it) raises SIGBUS on the
// next page past its new end. That cannot be turned into an exception, so it ends the process
// the way bad input does: one line naming the file, temporary outputs removed, exit status 2.
char mapped_name[4096];
std::once_flag sigbus_installed;

void on_sigbus(int) {
  constexpr char kPrefix[] = "memreplay: ";
  constexpr char kWhat[] =
      ": the file shrank while it was being read (changed by another process?); nothing was written\n";
  ssize_t ignored = ::write(2, kPrefix, sizeof kPrefix - 1);
  ignored = ::write(2, mapped_name, std::strlen(mapped_name));
  ignored = ::write(2, kWhat, sizeof kWhat - 1);
  (void)ignored;
  remove_guarded_files();
  ::_exit(2);
}

void guard_against_shrinking(const std::string& file) {
  const size_t n = std::min(file.size(), sizeof mapped_name - 1);
  std::memcpy(mapped_name, file.data(), n);
  mapped_name[n] = '\0';
  std::call_once(sigbus_installed, [] {
    struct sigaction current {};
    if (::sigaction(SIGBUS, nullptr, &current) != 0 || current.sa_handler != SIG_DFL) return;
    struct sigaction ours {};
    ours.sa_handler = on_sigbus;
    sigemptyset(&ours.sa_mask);
    ::sigaction(SIGBUS, &ours, nullptr);
  });
}

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
  guard_against_shrinking(for_file);
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
  fd_.reset(::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
#endif
  if (!fd_) {
    std::string name = dir + "/memreplay-scratch-XXXXXX";
    fd_.reset(::mkstemp(name.data()));
    if (fd_) ::unlink(name.c_str());
  }
  if (!fd_) throw InputError(for_file + ": cannot create a scratch file in " + dir + ": " + std::strerror(errno));
}

void ScratchFile::append(const void* bytes, size_t n) {
  const char* p = static_cast<const char*>(bytes);
  while (n > 0) {
    const ssize_t w = ::write(fd(), p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0)
      throw InputError(for_file_ + ": cannot write scratch data under " + scratch_dir() + ": " +
                       std::strerror(w < 0 ? errno : ENOSPC));
    p += w;
    n -= static_cast<size_t>(w);
    size_ += static_cast<uint64_t>(w);
  }
}

void ScratchFile::reserve(uint64_t bytes) {
  if (bytes <= size_) return;
  const int error = ::posix_fallocate(fd(), 0, static_cast<off_t>(bytes));
  if (error != 0)
    throw InputError(for_file_ + ": cannot write scratch data under " + scratch_dir() + ": " + std::strerror(error));
  size_ = bytes;
}

void* ScratchFile::map_writable(size_t bytes) const {
  void* map = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd(), 0);
  if (map == MAP_FAILED) throw InputError(for_file_ + ": cannot map scratch data: " + std::strerror(errno));
  return map;
}

MappedBytes ScratchFile::map() const { return MappedBytes(fd(), static_cast<size_t>(size_), for_file_); }

void ScratchFile::map_over(void* at, size_t bytes) const {
  if (::mmap(at, bytes, PROT_READ, MAP_SHARED | MAP_FIXED, fd(), 0) == MAP_FAILED)
    throw InputError(for_file_ + ": cannot map scratch data: " + std::strerror(errno));
}

}  // namespace memreplay
