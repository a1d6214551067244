// Storage for the block bookkeeping of block_pool.h: the node arenas and the address map.
#include "policies/pytorch/block_pool.h"

#include <algorithm>
#include <cstddef>

namespace memreplay::pytorch {

void* NodePool::take_slow(size_t bytes) {
  if (node_bytes_ == 0) {
    constexpr size_t align = alignof(std::max_align_t);
    node_bytes_ = std::max((bytes + align - 1) / align * align, sizeof(FreeNode));
  }
  if (bytes > node_bytes_) return ::operator new(bytes);
  chunks_.push_back(std::make_unique<std::byte[]>(node_bytes_ * kNodesPerChunk));
  std::byte* chunk = chunks_.back().get();
  for (size_t i = kNodesPerChunk; i-- > 0;) free_ = new (chunk + i * node_bytes_) FreeNode{free_};
  return take(bytes);
}

void BlockArena::refill() {
  chunks_.push_back(std::make_unique<CacheBlock[]>(kChunk));
  CacheBlock* chunk = chunks_.back().get();
  for (size_t i = kChunk; i-- > 0;) destroy(&chunk[i]);
}

AddressMap::AddressMap() : slots_(1024, Slot{kEmpty, nullptr}), mask_(1023), shift_(64 - 10) {}

size_t AddressMap::slot_of(uint64_t address) const {
  // Block addresses are multiples of 512: drop those bits, then Fibonacci hashing.
  return static_cast<size_t>(((address >> 9) * 0x9E3779B97F4A7C15ull) >> shift_);
}

void AddressMap::insert(uint64_t address, CacheBlock* block) {
  if ((size_ + 1) * 4 > slots_.size() * 3) grow();
  size_t i = slot_of(address);
  while (slots_[i].address != kEmpty && slots_[i].address != address) i = (i + 1) & mask_;
  if (slots_[i].address == kEmpty) ++size_;
  slots_[i] = Slot{address, block};
}

CacheBlock* AddressMap::find(uint64_t address) const {
  for (size_t i = slot_of(address);; i = (i + 1) & mask_) {
    if (slots_[i].address == address) return slots_[i].block;
    if (slots_[i].address == kEmpty) return nullptr;
  }
}

CacheBlock* AddressMap::take(uint64_t address) {
  size_t i = slot_of(address);
  while (slots_[i].address != address) {
    if (slots_[i].address == kEmpty) return nullptr;
    i = (i + 1) & mask_;
  }
  CacheBlock* block = slots_[i].block;
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

void AddressMap::grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(old.size() * 2, Slot{kEmpty, nullptr});
  mask_ = slots_.size() - 1;
  --shift_;
  size_ = 0;
  for (const Slot& slot : old)
    if (slot.address != kEmpty) insert(slot.address, slot.block);
}

}  // namespace memreplay::pytorch
