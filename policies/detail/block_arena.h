// Pointer-stable storage for a policy's block nodes, recycled through a free list. The block type
// links the free list itself through its `next` member (a free node has no neighbours to link).
#pragma once

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

namespace memreplay::detail {

template <class Block>
class BlockArena {
 public:
  BlockArena() = default;
  BlockArena(const BlockArena&) = delete;
  BlockArena& operator=(const BlockArena&) = delete;

  // A node holding Block{args...} (aggregate initialisation: unnamed members take their defaults).
  template <class... Args>
  Block* make(Args&&... args) {
    if (free_ == nullptr) refill();
    Block* block = free_;
    free_ = block->next;
    *block = Block{std::forward<Args>(args)...};
    return block;
  }
  void destroy(Block* block) {
    block->next = free_;
    free_ = block;
  }

 private:
  static constexpr size_t kChunk = 1024;
  void refill() {
    chunks_.push_back(std::make_unique<Block[]>(kChunk));
    Block* chunk = chunks_.back().get();
    for (size_t i = kChunk; i-- > 0;) destroy(&chunk[i]);
  }

  std::vector<std::unique_ptr<Block[]>> chunks_;
  Block* free_ = nullptr;
};

}  // namespace memreplay::detail
