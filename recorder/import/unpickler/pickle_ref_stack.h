// The unpickler's VM stack (pickle_reader.cpp), apart so that the machine's file stays readable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

#include "recorder/import/unpickler/pickle_reader.h"

namespace memreplay::pickle {

// The VM stack of references. Only ever shrinks by resize(); push is one compare and one
// store on the hot path. It is held as pointers, not a std::vector's size: a store of a Ref
// (a uint64_t) may alias any size_t the compiler keeps in memory, so a size member would be
// reloaded after every push, and the vector's end and size both.
class RefStack {
 public:
  size_t size() const { return static_cast<size_t>(top_ - begin_); }
  Ref back() const { return top_[-1]; }
  Ref operator[](size_t i) const { return begin_[i]; }
  const Ref* data() const { return begin_; }
  [[gnu::always_inline]] void push(Ref ref) {
    if (top_ == end_) grow();
    *top_++ = ref;
  }
  void pop() { --top_; }
  void resize(size_t n) { top_ = begin_ + n; }  // n <= size()
  // For a loop that pushes through a pointer of its own (Unpickler::run_scalar_ops): where the
  // next item goes, where room ends, and the new top once it is done.
  Ref* top() { return top_; }
  Ref* room_end() { return end_; }
  void set_top(Ref* top) { top_ = top; }  // within [data(), room_end()]

 private:
  [[gnu::noinline]] void grow() {
    const size_t size = this->size(), capacity = static_cast<size_t>(end_ - begin_) * 2 + 256;
    auto bigger = std::make_unique_for_overwrite<Ref[]>(capacity);
    if (size != 0) std::memcpy(bigger.get(), begin_, size * sizeof(Ref));
    buf_ = std::move(bigger);
    begin_ = buf_.get();
    top_ = begin_ + size;
    end_ = begin_ + capacity;
  }

  std::unique_ptr<Ref[]> buf_;
  Ref* begin_ = nullptr;
  Ref* top_ = nullptr;
  Ref* end_ = nullptr;
};

}  // namespace memreplay::pickle
