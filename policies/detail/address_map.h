// Values by address (a policy's live blocks; the engine's live trace blocks): open addressing,
// linear probing, backward-shift deletion, Fibonacci hashing of the whole address (folded first,
// so that addresses differing only in low bits, as a trace's may, still spread). Load factor <= 3/4. Every 64-bit
// address is a valid key: the one the slots use to mean "empty" is kept beside them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace memreplay::detail {

template <class Value>
class AddressMap {
 public:
  AddressMap() : slots_(1024, Slot{kEmpty, Value{}}), mask_(1023), shift_(64 - 10) {}

  // The value at `address`, or nullptr. Valid until the next insertion.
  Value* find(uint64_t address) {
    if (address == kEmpty) [[unlikely]]
      return empty_key_value_ ? &*empty_key_value_ : nullptr;
    for (size_t i = slot_of(address);; i = (i + 1) & mask_) {
      if (slots_[i].address == address) return &slots_[i].value;
      if (slots_[i].address == kEmpty) return nullptr;
    }
  }
  bool contains(uint64_t address) { return find(address) != nullptr; }

  // The value at `address`, value-initialised if there was none (second: it was made now).
  std::pair<Value*, bool> try_emplace(uint64_t address) {
    if (address == kEmpty) [[unlikely]] {
      const bool made = !empty_key_value_;
      if (made) {
        empty_key_value_.emplace();
        ++size_;
      }
      return {&*empty_key_value_, made};
    }
    if ((size_ + 1) * 4 > slots_.size() * 3) grow();
    size_t i = slot_of(address);
    while (slots_[i].address != kEmpty && slots_[i].address != address) i = (i + 1) & mask_;
    if (slots_[i].address == address) return {&slots_[i].value, false};
    slots_[i] = Slot{address, Value{}};
    ++size_;
    return {&slots_[i].value, true};
  }
  void insert(uint64_t address, Value value) { *try_emplace(address).first = std::move(value); }

  // Removes and returns the value at `address` (nullopt when there is none).
  std::optional<Value> take(uint64_t address) {
    if (address == kEmpty) [[unlikely]] {
      std::optional<Value> value = std::move(empty_key_value_);
      if (value) --size_;
      empty_key_value_.reset();
      return value;
    }
    size_t i = slot_of(address);
    while (slots_[i].address != address) {
      if (slots_[i].address == kEmpty) return std::nullopt;
      i = (i + 1) & mask_;
    }
    std::optional<Value> value = std::move(slots_[i].value);
    // Backward-shift deletion: pull later members of the probe run into the hole.
    for (size_t j = (i + 1) & mask_;; j = (j + 1) & mask_) {
      if (slots_[j].address == kEmpty) break;
      const size_t home = slot_of(slots_[j].address);
      // Move j into i unless its home lies cyclically in (i, j].
      const bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
      if (!stays) {
        slots_[i] = std::move(slots_[j]);
        i = j;
      }
    }
    slots_[i] = Slot{kEmpty, Value{}};
    --size_;
    return value;
  }

  // Calls visit(address, value) for every entry, in no particular order.
  template <class Visit>
  void for_each(Visit&& visit) const {
    for (const Slot& slot : slots_)
      if (slot.address != kEmpty) visit(slot.address, slot.value);
    if (empty_key_value_) visit(kEmpty, *empty_key_value_);
  }

  size_t size() const { return size_; }

 private:
  struct Slot {
    uint64_t address;  // kEmpty = no entry
    Value value;
  };
  static constexpr uint64_t kEmpty = ~0ull;

  size_t slot_of(uint64_t address) const {
    return static_cast<size_t>(((address ^ (address >> 32)) * 0x9E3779B97F4A7C15ull) >> shift_);
  }

  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.size() * 2, Slot{kEmpty, Value{}});
    mask_ = slots_.size() - 1;
    --shift_;
    for (Slot& slot : old) {
      if (slot.address == kEmpty) continue;
      size_t i = slot_of(slot.address);
      while (slots_[i].address != kEmpty) i = (i + 1) & mask_;
      slots_[i] = std::move(slot);
    }
  }

  std::vector<Slot> slots_;
  size_t mask_;
  unsigned shift_;  // 64 - log2(slot count): Fibonacci hashing keeps the top bits
  size_t size_ = 0;  // entries, the one beside the slots included
  std::optional<Value> empty_key_value_;  // the entry at address kEmpty, if any
};

}  // namespace memreplay::detail
