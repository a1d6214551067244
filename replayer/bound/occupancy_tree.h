// Which offsets are taken, and when: the index greedy-by-size placement asks "the lowest offset
// with `size` bytes free over this whole lifetime" of (offline_bound.h).
//
// A segment tree over time (moments 0..n-1, a power of two of leaves). A lifetime [from, to) splits
// into the usual O(log n) canonical nodes. Every node keeps two sets of offset ranges, each as
// sorted, disjoint, merged intervals:
//
//   cover  the blocks one of whose canonical nodes is this one (alive over all of its moments)
//   below  the blocks with a canonical node in this subtree, this node included
//
//                    [root]            a query [from, to) with canonical nodes Q collides with
//                   /      \           exactly: below(q) for q in Q (blocks inside q's span) and
//               [ a ]      [ b ]       cover(p) for every strict ancestor p of a q (blocks alive
//               /  \       /   \       over all of p, so over q); nothing else, and no test of
//             q1   ...   ...   q2      lifetimes is left to do.
//
// The lowest free offset is then a fixed point over those O(log n) interval lists: start at 0, and
// while some list has an interval overlapping [at, at + size), move `at` to its end. Each move
// steps over a whole merged run of blocks, so a query costs a few binary searches per list instead
// of a sort of every colliding block. Invariant: below(parent) ⊇ below(child), as offset sets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <absl/container/inlined_vector.h>

namespace memreplay {

class OccupancyTree {
 public:
  explicit OccupancyTree(size_t moments);

  // The lowest offset at which [offset, offset + size) overlaps no occupied range of a lifetime
  // that shares a moment with [from, to). Requires from < to <= moments.
  uint64_t lowest_free(uint32_t from, uint32_t to, uint64_t size);
  // Marks [offset, end) taken over the moments [from, to).
  void occupy(uint32_t from, uint32_t to, uint64_t offset, uint64_t end);

 private:
  struct Range {
    uint64_t start;
    uint64_t end;
  };
  // Sorted, disjoint, non-adjacent ranges; most nodes hold zero or one.
  struct RangeUnion {
    absl::InlinedVector<Range, 1> ranges;
    // Adds [start, end), merging what it overlaps or touches; false when it was already inside.
    bool add(uint64_t start, uint64_t end);
    // The end of the range that overlaps [at, at + size), or 0 when none does.
    uint64_t overlap_end(uint64_t at, uint64_t size) const;
  };
  struct Node {
    RangeUnion cover;
    RangeUnion below;
    uint32_t visit = 0;  // last query or update that reached it (ancestors are shared by canonical nodes)
  };
  void split(uint32_t from, uint32_t to);  // canonical nodes of [from, to) into canonical_

  size_t leaves_ = 1;
  std::vector<Node> nodes_;  // 1-based heap layout: children of i are 2i, 2i + 1; leaves from leaves_
  std::vector<size_t> canonical_;
  std::vector<const RangeUnion*> lists_;
  uint32_t visit_ = 0;
};

}  // namespace memreplay
