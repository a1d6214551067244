#include "recorder/import/pytorch/allocator_state.h"

#include <algorithm>
#include <iterator>
#include <map>

namespace memreplay {
namespace {

constexpr uint64_t kMinBlockSize = 512;  // PyTorch's kMinBlockSize: every block is a multiple

using SegmentMap = std::map<uint64_t, SegmentState>;

// Removes [lo, hi) from the expandable ranges it overlaps, keeping what lies outside it.
void cut_mapped(SegmentMap& segments, uint64_t lo, uint64_t hi) {
  auto it = segments.upper_bound(lo);
  if (it != segments.begin()) --it;
  while (it != segments.end() && it->first < hi) {
    const SegmentState r = it->second;
    const uint64_t end = r.address + r.size;
    if (!r.expandable || end <= lo) {
      ++it;
      continue;
    }
    it = segments.erase(it);
    if (r.address < lo) segments[r.address] = {r.address, lo - r.address, r.stream, true, r.pool};
    if (end > hi) it = segments.insert_or_assign(hi, SegmentState{hi, end - hi, r.stream, true, r.pool}).first;
  }
}

// Adds [lo, hi) as mapped, merged with touching ranges of the same stream: the snapshot reports
// each contiguous mapped range of an expandable segment as one segment.
void add_mapped(SegmentMap& segments, uint64_t lo, uint64_t hi, uint64_t stream) {
  SegmentState range{lo, hi - lo, stream, true};
  auto next = segments.lower_bound(lo);
  if (next != segments.begin()) {
    auto prev = std::prev(next);
    const SegmentState& p = prev->second;
    if (p.expandable && p.stream == stream && p.address + p.size == lo) {
      range.address = p.address;
      range.size += p.size;
      range.pool = p.pool;  // a range of the same expandable segment: the same pool
      segments.erase(prev);
    }
  }
  next = segments.lower_bound(hi);
  if (next != segments.end() && next->first == hi && next->second.expandable && next->second.stream == stream) {
    range.size += next->second.size;
    range.pool = next->second.pool;
    segments.erase(next);
  }
  segments[range.address] = range;
}

// Live blocks by address during the backward walk: a trace has one insert and one erase per
// allocation, so an open-addressing table (linear probing, backward-shift erase) with no
// per-entry allocation is several times faster than std::unordered_map here.
class BlockTable {
 public:
  explicit BlockTable(size_t expected) {
    size_t capacity = 64;
    while (capacity < expected * 2) capacity *= 2;
    slots_.resize(capacity);
    mask_ = capacity - 1;
  }
  BlockState* find(uint64_t address) {
    for (size_t i = home(address);; i = (i + 1) & mask_) {
      if (!slots_[i].used) return nullptr;
      if (slots_[i].block.address == address) return &slots_[i].block;
    }
  }
  // Inserts or overwrites the block at its address.
  void put(const BlockState& block) {
    size_t i = home(block.address);
    while (slots_[i].used && slots_[i].block.address != block.address) i = (i + 1) & mask_;
    if (!slots_[i].used && ++size_ * 2 > slots_.size()) {
      grow();
      put(block);
      return;
    }
    slots_[i] = {block, true};
  }
  void erase(uint64_t address) {
    size_t hole = home(address);
    while (slots_[hole].used && slots_[hole].block.address != address) hole = (hole + 1) & mask_;
    if (!slots_[hole].used) return;
    slots_[hole].used = false;
    --size_;
    // Backward shift: an entry later in the probe run moves into the hole unless its home lies
    // cyclically in (hole, j], so every remaining entry stays reachable from its home.
    for (size_t j = (hole + 1) & mask_; slots_[j].used; j = (j + 1) & mask_) {
      const size_t want = home(slots_[j].block.address);
      const bool stays = hole <= j ? (hole < want && want <= j) : (hole < want || want <= j);
      if (stays) continue;
      slots_[hole] = slots_[j];
      slots_[j].used = false;
      hole = j;
    }
  }
  template <typename F>
  void for_each(F&& f) const {
    for (const Slot& s : slots_)
      if (s.used) f(s.block);
  }

 private:
  struct Slot {
    BlockState block;
    bool used = false;
  };
  size_t home(uint64_t address) const {
    return static_cast<size_t>(((address >> 9) * 0x9E3779B97F4A7C15ull) >> 20) & mask_;
  }
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.size() * 2, Slot{});
    mask_ = slots_.size() - 1;
    size_ = 0;
    for (const Slot& s : old)
      if (s.used) put(s.block);
  }
  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace

AllocatorState rebuild_initial_state(const AllocatorState& final_state, std::span<const TraceStep> trace,
                                     const TraceWindowDone& done) {
  SegmentMap segments;
  for (const SegmentState& s : final_state.segments) segments[s.address] = s;
  BlockTable blocks(final_state.blocks.size() + 1024);
  for (const BlockState& b : final_state.blocks) blocks.put(b);

  TraceWindows windows(done, trace.size());
  for (size_t i = trace.size(); i-- > 0;) {
    const TraceStep& e = trace[i];
    windows.backward(i);
    switch (e.kind) {
      case EventKind::alloc: blocks.erase(e.address); break;
      case EventKind::free_requested:
        if (BlockState* b = blocks.find(e.address))
          b->pending_free = false;
        else
          blocks.put({e.address, e.size, 0, e.stream, false});
        break;
      case EventKind::free_completed: blocks.put({e.address, e.size, 0, e.stream, true}); break;
      case EventKind::segment_alloc: segments.erase(e.address); break;
      case EventKind::segment_free: segments[e.address] = {e.address, e.size, e.stream, false}; break;
      case EventKind::segment_map: cut_mapped(segments, e.address, e.address + e.size); break;
      case EventKind::segment_unmap: add_mapped(segments, e.address, e.address + e.size, e.stream); break;
      default: break;
    }
  }

  AllocatorState initial;
  initial.segments.reserve(segments.size());
  for (const auto& [address, s] : segments) initial.segments.push_back(s);
  blocks.for_each([&](BlockState block) {
    if (block.size == 0) {  // allocated before the trace, freed within it: size never recorded
      const uint64_t rounded = (block.requested + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize;
      block.size = std::max(kMinBlockSize, rounded);
    }
    initial.blocks.push_back(block);
  });
  std::sort(initial.blocks.begin(), initial.blocks.end(),
            [](const BlockState& a, const BlockState& b) { return a.address < b.address; });
  return initial;
}

std::vector<Event> preexisting_events(const AllocatorState& state, uint32_t device, uint64_t time_ns) {
  std::vector<Event> events;
  events.reserve(state.segments.size() + state.blocks.size() * 2);
  for (const SegmentState& s : state.segments)
    events.push_back({.kind = s.expandable ? EventKind::segment_map : EventKind::segment_alloc,
                      .pool = s.pool,
                      .device = device,
                      .time_ns = time_ns,
                      .stream = s.stream,
                      .address = s.address,
                      .size = s.size,
                      .flags = kPreexisting});
  // state.segments is sorted by address: a block's segment is the last one starting at or below it.
  auto pool_of = [&](uint64_t address) {
    auto it = std::upper_bound(state.segments.begin(), state.segments.end(), address,
                               [](uint64_t a, const SegmentState& s) { return a < s.address; });
    if (it == state.segments.begin()) return kDefaultPool;
    --it;
    return address < it->address + it->size ? it->pool : kDefaultPool;
  };
  for (const BlockState& b : state.blocks) {
    Event e{.kind = EventKind::alloc,
            .pool = pool_of(b.address),
            .device = device,
            .time_ns = time_ns,
            .stream = b.stream,
            .address = b.address,
            .size = b.requested,
            .flags = kPreexisting,
            .aux = b.size};
    events.push_back(e);
    if (b.pending_free) {
      e.kind = EventKind::free_requested;
      e.aux = 0;
      events.push_back(e);
    }
  }
  return events;
}

}  // namespace memreplay
