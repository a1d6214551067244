// Sole ownership of a file descriptor: closed when its owner goes, moved but never copied, so a
// class that holds one needs no destructor, copy or move of its own for it.
#pragma once

#include <utility>

namespace memreplay {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) noexcept : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  // Closes the descriptor held (if any) and holds `fd` instead. The close is not checked: a
  // writer that must know its data reached the file closes it itself (release(), then close()).
  void reset(int fd = -1) noexcept;
  // Gives the descriptor up without closing it; the caller owns it now.
  int release() noexcept { return std::exchange(fd_, -1); }

 private:
  int fd_ = -1;
};

}  // namespace memreplay
