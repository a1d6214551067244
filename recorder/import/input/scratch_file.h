// Scratch space on disk for imports larger than memory should hold: an unlinked temporary file
// (nothing is left behind, whatever ends the process) that is written once, then mapped
// read-only; a reader hands the pages it has passed back to the kernel (MappedBytes::release),
// so resident memory stays a window, not the file. The pickle memo (pickle_memo.h) instead
// reserves the file and stores through a shared read-write map.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/unique_fd.h"

namespace memreplay {

// A read-only map of a file descriptor's first `bytes` bytes (nothing mapped for 0 bytes). If the
// file shrinks under the map, the SIGBUS that follows prints one line naming `for_file`, removes
// the temporary outputs (temp_file_cleanup.h) and exits with status 2 (a program with its own
// SIGBUS handler keeps it).
class MappedBytes {
 public:
  MappedBytes() = default;
  // `for_file` names the input in the InputError thrown when the map fails.
  MappedBytes(int fd, size_t bytes, const std::string& for_file);
  ~MappedBytes();
  MappedBytes(MappedBytes&& other) noexcept;
  MappedBytes& operator=(MappedBytes&& other) noexcept;
  MappedBytes(const MappedBytes&) = delete;
  MappedBytes& operator=(const MappedBytes&) = delete;

  const char* data() const { return static_cast<const char*>(map_); }
  size_t size() const { return bytes_; }
  // Drops the whole pages inside [begin, end) from this process (MADV_DONTNEED). They read back
  // from the file if touched again, so this costs time, never correctness.
  void release(size_t begin, size_t end) const;

 private:
  void* map_ = nullptr;
  size_t bytes_ = 0;
};

// An anonymous file in $TMPDIR (else /tmp): O_TMPFILE where the file system has it, else a
// mkstemp file unlinked at once.
class ScratchFile {
 public:
  // `for_file` names the input being imported in errors (cannot create, disk full).
  explicit ScratchFile(const std::string& for_file);

  void append(const void* bytes, size_t n);
  uint64_t size() const { return size_; }
  // The file's descriptor, for a writer of its own (the file stays the ScratchFile's to close).
  int fd() const { return fd_.get(); }
  // Makes the file at least `bytes` long, its blocks allocated (zeros past what was written), so
  // that stores through map_writable() cannot fail for want of disk.
  void reserve(uint64_t bytes);
  // Maps the file's first `bytes` bytes read-write and shared: stores go to the file. The caller
  // unmaps (munmap) or moves (mremap) the map.
  void* map_writable(size_t bytes) const;
  // The bytes written so far, mapped; append no more after this.
  MappedBytes map() const;
  // Maps the file read-only and shared over [at, at + bytes), in place of what was mapped there
  // (MAP_FIXED; the caller owns the range and unmaps it). Bytes appended later show through; a
  // page wholly past the file's end must not be touched.
  void map_over(void* at, size_t bytes) const;

 private:
  std::string for_file_;
  UniqueFd fd_;
  uint64_t size_ = 0;
};

}  // namespace memreplay
