// NodePool's slow path: the first request fixes the node size; later ones carve a new chunk.
#include "policies/detail/node_pool.h"

#include <algorithm>

namespace memreplay::detail {

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

}  // namespace memreplay::detail
