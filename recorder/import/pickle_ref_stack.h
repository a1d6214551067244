// The unpickler's VM stack (pickle_reader.cpp), apart so that the machine's file stays readable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "recorder/import/pickle_reader.h"

namespace memreplay::pickle {

// The VM stack of references. Only ever shrinks by resize(); push is one compare and one
// store on the hot path (std::vector::push_back did not inline in the dispatch loop).
class RefStack {
 public:
  size_t size() const { return size_; }
  Ref back() const { return buf_[size_ - 1]; }
  Ref operator[](size_t i) const { return buf_[i]; }
  const Ref* data() const { return buf_.data(); }
  [[gnu::always_inline]] void push(Ref ref) {
    if (size_ == buf_.size()) grow();
    buf_[size_++] = ref;
  }
  void pop() { --size_; }
  void resize(size_t n) { size_ = n; }  // n <= size()

 private:
  [[gnu::noinline]] void grow() { buf_.resize(buf_.size() * 2 + 256); }

  std::vector<Ref> buf_;
  size_t size_ = 0;
};

}  // namespace memreplay::pickle
