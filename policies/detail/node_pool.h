// Fixed-size node storage for node-based containers (std::set of free blocks): nodes come from a
// free list instead of malloc. One pool per policy, shared by the allocator copies the containers
// make (rebinding keeps the pool).
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <vector>

namespace memreplay::detail {

class NodePool {
 public:
  NodePool() = default;
  NodePool(const NodePool&) = delete;
  NodePool& operator=(const NodePool&) = delete;

  void* take(size_t bytes) {
    if (free_ == nullptr || bytes > node_bytes_) return take_slow(bytes);
    FreeNode* node = free_;
    free_ = node->next;
    return node;
  }
  void give(void* node, size_t bytes) noexcept {
    if (bytes > node_bytes_) {
      ::operator delete(node);
      return;
    }
    free_ = new (node) FreeNode{free_};
  }

 private:
  struct FreeNode {
    FreeNode* next;
  };
  static constexpr size_t kNodesPerChunk = 512;
  void* take_slow(size_t bytes);

  size_t node_bytes_ = 0;  // set by the first request: every node of a set has one size
  std::vector<std::unique_ptr<std::byte[]>> chunks_;
  FreeNode* free_ = nullptr;  // intrusive free list through the unused nodes
};

// A standard allocator over a shared NodePool: single nodes from the pool, arrays from new.
template <class T>
class NodeAllocator {
 public:
  using value_type = T;
  explicit NodeAllocator(std::shared_ptr<NodePool> pool) : pool_(std::move(pool)) {}
  template <class U>
  NodeAllocator(const NodeAllocator<U>& other) : pool_(other.pool()) {}  // NOLINT: rebinding
  T* allocate(size_t n) {
    return static_cast<T*>(n == 1 ? pool_->take(sizeof(T)) : ::operator new(n * sizeof(T)));
  }
  void deallocate(T* p, size_t n) noexcept {
    if (n == 1) {
      pool_->give(p, sizeof(T));
    } else {
      ::operator delete(p);
    }
  }
  const std::shared_ptr<NodePool>& pool() const { return pool_; }
  template <class U>
  bool operator==(const NodeAllocator<U>& other) const { return pool_ == other.pool(); }

 private:
  std::shared_ptr<NodePool> pool_;
};

}  // namespace memreplay::detail
