// The unpickler's VM stack (pickle_reader.cpp), apart so that the machine's file stays readable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace memreplay::pickle {

// The VM stack of references. Only ever shrinks by resize(); push is one compare and one
// store on the hot path (std::vector::push_back did not inline in the dispatch loop).
class RefStack {
 public:
  size_t size() const { return size_; }
  uint32_t back() const { return buf_[size_ - 1]; }
  uint32_t operator[](size_t i) const { return buf_[i]; }
  const uint32_t* data() const { return buf_.data(); }
  [[gnu::always_inline]] void push(uint32_t ref) {
    if (size_ == buf_.size()) grow();
    buf_[size_++] = ref;
  }
  void pop() { --size_; }
  void resize(size_t n) { size_ = n; }  // n <= size()

 private:
  [[gnu::noinline]] void grow() { buf_.resize(buf_.size() * 2 + 256); }

  std::vector<uint32_t> buf_;
  size_t size_ = 0;
};

}  // namespace memreplay::pickle
