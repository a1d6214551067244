#include "recorder/import/unpickler/pickle_memo.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "proto/input_error.h"

namespace memreplay::pickle {
namespace {

constexpr uint64_t kFirstCapacity = 4096;

uint64_t page_bytes() {
  static const auto page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  return page;
}

}  // namespace

PickleMemo::PickleMemo(const std::string& file) : for_file_(file) {}

PickleMemo::~PickleMemo() {
  if (file_ != nullptr) ::munmap(slots_, capacity_ * sizeof(Ref));
}

void PickleMemo::make_room(uint64_t n) {
  if (n > capacity_) {
    uint64_t capacity = std::max(capacity_ * 2, kFirstCapacity);
    while (capacity < n) capacity *= 2;
    if (file_ != nullptr) {
      grow_file(capacity);
    } else if (capacity <= kInMemorySlots) {
      memory_.resize(capacity);  // zero: unset
      slots_ = memory_.data();
      capacity_ = capacity;
    } else {
      spill(capacity);
    }
  }
  if (file_ != nullptr && n > next_release_) {
    release_behind();
    next_release_ = (n / kReleaseSlots + 1) * kReleaseSlots;
  }
  limit_ = file_ != nullptr ? std::min(capacity_, next_release_) : capacity_;
}

// The slots so far go to the file, which is then mapped in their place.
void PickleMemo::spill(uint64_t capacity) {
  file_ = std::make_unique<ScratchFile>(for_file_);
  file_->append(memory_.data(), size_ * sizeof(Ref));
  file_->reserve(capacity * sizeof(Ref));
  slots_ = static_cast<Ref*>(file_->map_writable(capacity * sizeof(Ref)));
  capacity_ = capacity;
  std::vector<Ref>().swap(memory_);
  next_release_ = 0;
}

void PickleMemo::grow_file(uint64_t capacity) {
  file_->reserve(capacity * sizeof(Ref));
  void* moved = ::mremap(slots_, capacity_ * sizeof(Ref), capacity * sizeof(Ref), MREMAP_MAYMOVE);
  if (moved == MAP_FAILED) throw InputError(for_file_ + ": cannot map the pickle memo: " + std::strerror(errno));
  slots_ = static_cast<Ref*>(moved);
  capacity_ = capacity;
}

// Everything but the last kReleaseSlots slots: written there, it reads back from the file.
void PickleMemo::release_behind() {
  if (size_ <= kReleaseSlots) return;
  const uint64_t bytes = (size_ - kReleaseSlots) * sizeof(Ref) / page_bytes() * page_bytes();
  if (bytes > 0) ::madvise(slots_, bytes, MADV_DONTNEED);
}

}  // namespace memreplay::pickle
