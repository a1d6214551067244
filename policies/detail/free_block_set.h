// Free blocks of one pool, ordered by (stream, size, address), streams and addresses compared as
// unsigned values: lower_bound(stream, size) is best fit by size, lowest address among equals,
// same stream only.
//
// Size bins rather than a tree: per stream, free blocks sit in 8 bins per power of two, each a
// list sorted by (size, address), with a bitmap of the bins that hold a block. Bins partition the
// sizes in order, so walking them upwards visits the blocks in exactly the order of one
// (stream, size, address)-ordered set. On real traces a pool holds a few dozen free blocks
// (gpt2_generate: 15 on average, 39 at most), so a bin holds one or two: best fit is a bitmap scan
// and a short walk, erase is an unlink, where a tree descends, mispredicting at about every other
// level, and rebalances on each change. The cost: a bin's list is walked to insert, so thousands of
// free blocks of one size class in one pool make inserts linear in them.
//
// Streams with no free block leave the set; inserting a block of a new stream invalidates
// iterators. The lists are intrusive. Block needs: StreamId stream; uint64_t size, address; Block* free_prev,
// free_next (its links while in the set). A block's stream, size and address must not change while
// it is in the set (every caller erases before it resizes or moves a block).
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <vector>

#include "policies/device.h"

namespace memreplay::detail {

template <class Block>
class FreeBlockSet {
  struct StreamBins;

 public:
  // Visits blocks in set order; dereferences to the block.
  class iterator {
   public:
    using iterator_category = std::bidirectional_iterator_tag;
    using value_type = Block;
    using difference_type = std::ptrdiff_t;
    using pointer = Block*;
    using reference = Block&;

    Block& operator*() const { return *block_; }
    Block* operator->() const { return block_; }
    iterator& operator++() {
      if (block_->free_next != nullptr) {
        block_ = block_->free_next;
      } else {
        *this = set_->first_from(stream_, bin_of(block_->size) + 1);
      }
      return *this;
    }
    iterator operator++(int) {
      iterator before = *this;
      ++*this;
      return before;
    }
    iterator& operator--() {  // not on begin()
      if (block_ == nullptr) {
        *this = set_->last_before(set_->streams_.size(), 0);
      } else if (block_->free_prev != nullptr) {
        block_ = block_->free_prev;
      } else {
        *this = set_->last_before(stream_, bin_of(block_->size));
      }
      return *this;
    }
    friend bool operator==(const iterator& a, const iterator& b) { return a.block_ == b.block_; }

   private:
    friend class FreeBlockSet;
    iterator(const FreeBlockSet* set, size_t stream, Block* block) : set_(set), stream_(stream), block_(block) {}
    const FreeBlockSet* set_;
    size_t stream_;  // index into streams_ (streams_.size() at end)
    Block* block_;  // nullptr at end
  };

  iterator begin() const { return first_from(0, 0); }
  iterator end() const { return iterator(this, streams_.size(), nullptr); }

  // First block with key >= (stream, size, 0).
  iterator lower_bound(StreamId stream, uint64_t size) const {
    const size_t s = stream_index(stream);
    if (s == streams_.size() || streams_[s]->stream != stream) return first_from(s, 0);
    const size_t bin = bin_of(size);
    for (Block* b = streams_[s]->heads[bin]; b != nullptr; b = b->free_next)
      if (b->size >= size) return iterator(this, s, b);
    return first_from(s, bin + 1);
  }

  void insert(Block* block) {
    StreamBins& bins = bins_for(block->stream);
    const size_t bin = bin_of(block->size);
    // The first block of the bin with a larger key; the new one goes before it.
    Block* after = bins.heads[bin];
    Block* before = nullptr;
    while (after != nullptr &&
           (after->size < block->size || (after->size == block->size && after->address < block->address))) {
      before = after;
      after = after->free_next;
    }
    block->free_prev = before;
    block->free_next = after;
    (before != nullptr ? before->free_next : bins.heads[bin]) = block;
    if (after != nullptr) after->free_prev = block;
    bins.occupied[bin / 64] |= uint64_t{1} << (bin % 64);
    ++bins.count;
    ++size_;
  }

  // `block` must be in the set.
  void erase(Block* block) { unlink(stream_index(block->stream), block); }
  void erase(iterator it) { unlink(it.stream_, it.block_); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  static constexpr size_t kSubBins = 8;
  static constexpr size_t kBins = 64 * kSubBins;
  static constexpr size_t kWords = kBins / 64;

  // Bins partition sizes in order: exact below 8, then 8 per power of two.
  static size_t bin_of(uint64_t size) {
    if (size < kSubBins) return static_cast<size_t>(size);
    const int top = std::bit_width(size) - 1;  // >= 3
    return static_cast<size_t>(top) * kSubBins + ((size >> (top - 3)) & (kSubBins - 1));
  }

  struct StreamBins {
    explicit StreamBins(StreamId s) : stream(s) {}
    StreamId stream;
    size_t count = 0;  // blocks in its bins
    std::array<Block*, kBins> heads{};
    std::array<uint64_t, kWords> occupied{};  // bit b: heads[b] is not empty
  };

  void unlink(size_t s, Block* block) {
    StreamBins& bins = *streams_[s];
    const size_t bin = bin_of(block->size);
    (block->free_prev != nullptr ? block->free_prev->free_next : bins.heads[bin]) = block->free_next;
    if (block->free_next != nullptr) block->free_next->free_prev = block->free_prev;
    if (bins.heads[bin] == nullptr) bins.occupied[bin / 64] &= ~(uint64_t{1} << (bin % 64));
    block->free_prev = block->free_next = nullptr;
    --size_;
    if (--bins.count == 0) retire(s);
  }

  // The first stream index whose stream is >= `stream` (streams_ are few: a scan).
  size_t stream_index(StreamId stream) const {
    size_t s = 0;
    while (s < streams_.size() && streams_[s]->stream < stream) ++s;
    return s;
  }
  StreamBins& bins_for(StreamId stream) {
    const size_t s = stream_index(stream);
    if (s == streams_.size() || streams_[s]->stream != stream) {
      std::unique_ptr<StreamBins> bins;
      if (spare_.empty()) {
        bins = std::make_unique<StreamBins>(stream);
      } else {
        bins = std::move(spare_.back());
        spare_.pop_back();
        bins->stream = stream;
      }
      streams_.insert(streams_.begin() + static_cast<std::ptrdiff_t>(s), std::move(bins));
    }
    return *streams_[s];
  }
  // A stream without free blocks leaves the set, so that memory follows the streams that hold
  // free blocks, not every stream ever seen; its empty bins are kept for reuse (a few).
  void retire(size_t s) {
    if (spare_.size() < kSpareBins) spare_.push_back(std::move(streams_[s]));
    streams_.erase(streams_.begin() + static_cast<std::ptrdiff_t>(s));
  }

  // The first block in a bin >= `bin` of stream index `s`, else of the streams after it.
  iterator first_from(size_t s, size_t bin) const {
    for (; s < streams_.size(); ++s, bin = 0) {
      const StreamBins& bins = *streams_[s];
      for (size_t word = bin / 64; word < kWords; ++word) {
        uint64_t bits = bins.occupied[word];
        if (word == bin / 64) bits &= ~uint64_t{0} << (bin % 64);
        if (bits != 0) return iterator(this, s, bins.heads[word * 64 + static_cast<size_t>(std::countr_zero(bits))]);
      }
    }
    return end();
  }
  // The last block in a bin < `bin` of stream index `s`, else of the streams before it.
  iterator last_before(size_t s, size_t bin) const {
    for (;;) {
      if (s < streams_.size()) {
        const StreamBins& bins = *streams_[s];
        for (size_t b = bin; b-- > 0;) {
          if (b % 64 == 63 && bins.occupied[b / 64] == 0) {
            b -= 63;
            continue;
          }
          if (Block* last = bins.heads[b]; last != nullptr) {
            while (last->free_next != nullptr) last = last->free_next;  // bins are short
            return iterator(this, s, last);
          }
        }
      }
      if (s == 0) return end();
      --s;
      bin = kBins;
    }
  }

  static constexpr size_t kSpareBins = 4;
  std::vector<std::unique_ptr<StreamBins>> streams_;  // ascending by stream, each with free blocks
  std::vector<std::unique_ptr<StreamBins>> spare_;  // empty, for the next new stream
  size_t size_ = 0;
};

}  // namespace memreplay::detail
