// Storage for the block bookkeeping of block_pool.h: the node arenas and the address map.
#include "policies/pytorch/block_pool.h"

namespace memreplay::pytorch {

void* NodePool::take(size_t bytes) {
  if (node_bytes_ == 0) node_bytes_ = (bytes + alignof(std::max_align_t) - 1) / alignof(std::max_align_t) * alignof(std::max_align_t);
  if (bytes > node_bytes_) return ::operator new(bytes);
  if (free_.empty()) {
    chunks_.push_back(std::make_unique<std::byte[]>(node_bytes_ * kNodesPerChunk));
    free_.reserve(chunks_.size() * kNodesPerChunk);  // give() then never reallocates
    std::byte* chunk = chunks_.back().get();
    for (size_t i = kNodesPerChunk; i-- > 0;) free_.push_back(chunk + i * node_bytes_);
  }
  void* node = free_.back();
  free_.pop_back();
  return node;
}

void NodePool::give(void* node, size_t bytes) noexcept {
  if (bytes > node_bytes_) {
    ::operator delete(node);
    return;
  }
  free_.push_back(node);
}

CacheBlock* BlockArena::make(uint64_t address, uint64_t size, StreamId stream, BlockPool* pool) {
  if (free_.empty()) {
    chunks_.push_back(std::make_unique<CacheBlock[]>(kChunk));
    free_.reserve(chunks_.size() * kChunk);
    CacheBlock* chunk = chunks_.back().get();
    for (size_t i = kChunk; i-- > 0;) free_.push_back(&chunk[i]);
  }
  CacheBlock* block = free_.back();
  free_.pop_back();
  *block = CacheBlock{};
  block->address = address;
  block->size = size;
  block->stream = stream;
  block->pool = pool;
  return block;
}

void BlockArena::destroy(CacheBlock* block) { free_.push_back(block); }

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
