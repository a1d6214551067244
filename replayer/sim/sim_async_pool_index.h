// The size index of SimAsyncPool's free ranges: ordered by (owner, size, start), so that best fit
// is the first range of an owner with size >= the request, the lowest address on a tie.
//
// Two representations of one order. Size bins (FreeBlockSet, intrusive lists per bin): a pool
// holds a few dozen free ranges on real traces (gpt2_generate: 15 on average, 39 at most), where
// a bitmap scan and a short walk beat a B-tree by about a fifth of the replay's instructions. But a
// bin's list is walked to insert, so thousands of free ranges of one size class would make every
// free linear in them (quadratic over a 1 MB trace); past kMaxBinnedRanges the index moves to a
// B-tree for good, which costs a logarithm per change whatever the input.
#pragma once

#include <cstdint>
#include <tuple>

#include <absl/container/btree_map.h>

#include "policies/detail/free_block_set.h"
#include "policies/device.h"

namespace memreplay {

// Range needs StreamId stream; uint64_t size, address; Range* free_prev, free_next (FreeBlockSet's
// contract: its key fields do not change while it is in the index).
template <class Range>
class SimAsyncPoolIndex {
 public:
  static constexpr size_t kMaxBinnedRanges = 1024;

  void insert(Range* range) {
    if (tree_mode_) {
      tree_.emplace(key_of(*range), range);
      return;
    }
    bins_.insert(range);
    if (bins_.size() > kMaxBinnedRanges) move_to_tree();
  }
  void erase(Range* range) {
    if (tree_mode_)
      tree_.erase(key_of(*range));
    else
      bins_.erase(range);
  }
  // The first range of `owner` with size >= `size` (lowest address on a tie), or nullptr.
  Range* best_fit(StreamId owner, uint64_t size) const {
    if (tree_mode_) {
      const auto it = tree_.lower_bound(Key{owner, size, 0});
      return it != tree_.end() && std::get<0>(it->first) == owner ? it->second : nullptr;
    }
    const auto it = bins_.lower_bound(owner, size);
    return it != bins_.end() && it->stream == owner ? &*it : nullptr;
  }
  // fn(Range*) for every range, in index order (the index must not change meanwhile).
  template <class Fn>
  void for_each(Fn fn) const {
    if (tree_mode_) {
      for (const auto& entry : tree_) fn(entry.second);
      return;
    }
    for (auto it = bins_.begin(); it != bins_.end(); ++it) fn(&*it);
  }
  bool binned() const { return !tree_mode_; }

 private:
  using Key = std::tuple<StreamId, uint64_t, uint64_t>;
  static Key key_of(const Range& r) { return {r.stream, r.size, r.address}; }

  void move_to_tree() {
    for (auto it = bins_.begin(); it != bins_.end(); ++it) tree_.emplace(key_of(*it), &*it);
    bins_ = detail::FreeBlockSet<Range>();
    tree_mode_ = true;
  }

  bool tree_mode_ = false;
  detail::FreeBlockSet<Range> bins_;
  absl::btree_map<Key, Range*> tree_;
};

}  // namespace memreplay
