// A fixed-capacity array of trivially copyable values in anonymous memory reserved up front:
// address space only (pages cost memory once written), on huge pages where the kernel has them
// (transparent huge pages, madvise mode) once it holds 2 MiB. The importer's per-entry columns
// fill hundreds of megabytes front to back; 4 KiB faults and the copies of a doubling vector cost
// them a tenth of the unpickling thread's time. Small arrays stay on small pages: a hostile
// snapshot of a thousand devices of one entry each must not cost a huge page per column.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <new>
#include <span>
#include <type_traits>
#include <utility>

namespace memreplay {

template <typename T>
class HugePageArray {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  HugePageArray() = default;
  // Throws std::bad_alloc when the address space cannot be reserved.
  explicit HugePageArray(size_t capacity) : capacity_(capacity) {
    void* range = ::mmap(nullptr, bytes(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (range == MAP_FAILED) throw std::bad_alloc();
    data_ = static_cast<T*>(range);
  }
  ~HugePageArray() {
    if (data_ != nullptr) ::munmap(data_, bytes());
  }
  HugePageArray(HugePageArray&& other) noexcept { swap(other); }
  HugePageArray& operator=(HugePageArray&& other) noexcept {
    HugePageArray(std::move(other)).swap(*this);
    return *this;
  }

  bool reserved() const { return data_ != nullptr; }
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  const T* data() const { return data_; }
  std::span<const T> view() const { return {data_, size_}; }
  // The caller keeps size() below capacity().
  void push_back(const T& value) {
    if (size_ == kSmallEntries && !huge_) huge_ = ::madvise(data_, bytes(), MADV_HUGEPAGE) == 0;
    data_[size_++] = value;
  }
  // Empties the array and gives back its pages past the first `kept` values; the reservation
  // stays. An array refilled in batches keeps a batch's pages: faulting them in again would zero
  // them again (a huge page each time).
  void clear(size_t kept = 0) {
    const size_t kept_bytes = (kept * sizeof(T) + kHugePage - 1) / kHugePage * kHugePage;
    if (size_ * sizeof(T) > kept_bytes)
      ::madvise(reinterpret_cast<char*>(data_) + kept_bytes, bytes() - kept_bytes, MADV_DONTNEED);
    size_ = 0;
  }

 private:
  static constexpr size_t kHugePage = size_t{2} << 20;
  static constexpr size_t kSmallEntries = kHugePage / sizeof(T);
  size_t bytes() const { return capacity_ * sizeof(T); }
  void swap(HugePageArray& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    std::swap(capacity_, other.capacity_);
    std::swap(huge_, other.huge_);
  }
  T* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
  bool huge_ = false;  // advised
};

}  // namespace memreplay
