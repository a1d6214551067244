// Live (handed-out) blocks by address: open addressing, linear probing, backward-shift deletion,
// Fibonacci hashing of the address without its low 9 bits (block addresses are multiples of 512
// in the policies that use it; other addresses only probe a little longer). Load factor <= 3/4.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace memreplay::detail {

template <class Block>
class AddressMap {
 public:
  AddressMap() : slots_(1024, Slot{kEmpty, nullptr}), mask_(1023), shift_(64 - 10) {}

  void insert(uint64_t address, Block* block) {
    if ((size_ + 1) * 4 > slots_.size() * 3) grow();
    size_t i = slot_of(address);
    while (slots_[i].address != kEmpty && slots_[i].address != address) i = (i + 1) & mask_;
    if (slots_[i].address == kEmpty) ++size_;
    slots_[i] = Slot{address, block};
  }

  // Removes and returns the block at `address`, or nullptr.
  Block* take(uint64_t address) {
    size_t i = slot_of(address);
    while (slots_[i].address != address) {
      if (slots_[i].address == kEmpty) return nullptr;
      i = (i + 1) & mask_;
    }
    Block* block = slots_[i].block;
    // Backward-shift deletion: pull later members of the probe run into the hole.
    for (size_t j = (i + 1) & mask_;; j = (j + 1) & mask_) {
      if (slots_[j].address == kEmpty) break;
      const size_t home = slot_of(slots_[j].address);
      // Move j into i unless its home lies cyclically in (i, j].
      const bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
      if (!stays) {
        slots_[i] = slots_[j];
        i = j;
      }
    }
    slots_[i] = Slot{kEmpty, nullptr};
    --size_;
    return block;
  }

  Block* find(uint64_t address) const {
    for (size_t i = slot_of(address);; i = (i + 1) & mask_) {
      if (slots_[i].address == address) return slots_[i].block;
      if (slots_[i].address == kEmpty) return nullptr;
    }
  }

  size_t size() const { return size_; }

 private:
  struct Slot {
    uint64_t address;  // kEmpty = no block
    Block* block;
  };
  static constexpr uint64_t kEmpty = ~0ull;  // never a block address

  size_t slot_of(uint64_t address) const {
    return static_cast<size_t>(((address >> 9) * 0x9E3779B97F4A7C15ull) >> shift_);
  }

  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.size() * 2, Slot{kEmpty, nullptr});
    mask_ = slots_.size() - 1;
    --shift_;
    size_ = 0;
    for (const Slot& slot : old)
      if (slot.address != kEmpty) insert(slot.address, slot.block);
  }

  std::vector<Slot> slots_;
  size_t mask_;
  unsigned shift_;  // 64 - log2(slot count): Fibonacci hashing keeps the top bits
  size_t size_ = 0;
};

}  // namespace memreplay::detail
