// The unpickler's memo (unpickler.h): memo index -> Ref, for PUT/MEMOIZE and GET.
//
// Real picklers memoize objects 0, 1, 2... as they go, and PyTorch's memoize two per trace entry
// (the entry dict and a fresh str), so the memo grows with the trace: 8 B a slot, 16 B an entry,
// about 670 MB for a 3 GB snapshot of 42 M entries. A GET may name any index, however old (every
// entry fetches the key strings memoized at the start; aliased frames lists come back from any
// time). So the slots stay one array, indexed directly, but past kInMemorySlots it is an unlinked
// scratch file mapped shared, and every kReleaseSlots slots the map's pages are given back but
// the last kReleaseSlots: resident memory stays under about 3 × kReleaseSlots × 8 B (24 MiB)
// plus the pages that GETs of old indexes read back in between, from the page cache or the disk.
//
// A slot holds its Ref xor kUnset, so a slot never written (zero-filled, in memory or in the
// file) reads as kUnset: a hostile PUT far ahead costs address space and a sparse file, not
// writes of every slot in between.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "recorder/import/input/scratch_file.h"
#include "recorder/import/unpickler/pickle_reader.h"

namespace memreplay::pickle {

class PickleMemo {
 public:
  static constexpr Ref kUnset = ~Ref{0};
  static constexpr uint64_t kInMemorySlots = uint64_t{4} << 20;  // 32 MiB
  static constexpr uint64_t kReleaseSlots = uint64_t{1} << 20;  // 8 MiB

  // `file` names the input in the errors of the scratch file (cannot create, disk full).
  explicit PickleMemo(const std::string& file);
  ~PickleMemo();
  PickleMemo(const PickleMemo&) = delete;
  PickleMemo& operator=(const PickleMemo&) = delete;

  // One past the highest index stored.
  uint64_t size() const { return size_; }
  // The Ref at `index` (< size()), kUnset where none was stored.
  [[gnu::always_inline]] Ref operator[](uint64_t index) const { return slots_[index] ^ kUnset; }
  [[gnu::always_inline]] void set(uint64_t index, Ref ref) { slots_[index] = ref ^ kUnset; }  // index < size()
  [[gnu::always_inline]] void push_back(Ref ref) {
    if (size_ == limit_) make_room(size_ + 1);
    slots_[size_++] = ref ^ kUnset;
  }
  // Grows size() to `n`, the new slots unset (n > size()).
  void resize(uint64_t n) {
    make_room(n);
    size_ = n;
  }
  // Where the slots are, for tests that look at what is resident (the file's map, once spilled).
  const void* data() const { return slots_; }
  bool spilled() const { return file_ != nullptr; }

 private:
  // Makes slots_ hold at least `n` slots, and gives back pages of the map behind.
  void make_room(uint64_t n);
  void spill(uint64_t capacity);
  void grow_file(uint64_t capacity);
  void release_behind();

  std::string for_file_;
  std::vector<Ref> memory_;  // before the spill
  std::unique_ptr<ScratchFile> file_;
  Ref* slots_ = nullptr;
  uint64_t size_ = 0;
  uint64_t capacity_ = 0;
  uint64_t limit_ = 0;  // min(capacity_, next release): where push_back leaves its fast path
  uint64_t next_release_ = 0;
};

}  // namespace memreplay::pickle
