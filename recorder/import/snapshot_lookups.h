// Two small lookup tables of the snapshot importer, each answering millions of queries of the
// same few keys: a cache of how a pickle node classifies, and stream handles as small labels.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <unordered_map>
#include <vector>

#include "recorder/import/pickle_reader.h"

namespace memreplay {

// Snapshot pickles memoize every key and action string, so a few nodes answer millions of
// lookups: remember each node's classification in a small direct-mapped cache.
template <typename T>
class NodeCache {
 public:
  explicit NodeCache(T (*classify)(pickle::Value)) : classify_(classify) {}
  T get(pickle::Value v) {
    // Fibonacci hashing: ids are input offsets, whose low bits collide too often.
    Slot& slot = slots_[(v.id() * 0x9E3779B1u) >> (32 - kSlotBits)];
    if (slot.id != v.id()) slot = {v.id(), classify_(v)};
    return slot.value;
  }

 private:
  static constexpr unsigned kSlotBits = 6;
  static constexpr size_t kSlots = size_t{1} << kSlotBits;
  struct Slot {
    uint32_t id = std::numeric_limits<uint32_t>::max();
    T value{};
  };
  std::array<Slot, kSlots> slots_{};
  T (*classify_)(pickle::Value);
};

// Stream handles as small labels (TraceStep::stream): a trace uses a handful of streams.
class StreamTable {
 public:
  uint32_t label(uint64_t handle) {
    if (!handles_.empty() && handle == last_handle_) return last_label_;
    const auto [it, inserted] = labels_.try_emplace(handle, static_cast<uint32_t>(handles_.size()));
    if (inserted) handles_.push_back(handle);
    last_handle_ = handle;
    last_label_ = it->second;
    return last_label_;
  }
  uint64_t handle(uint64_t label) const { return handles_[label]; }

 private:
  std::unordered_map<uint64_t, uint32_t> labels_;
  std::vector<uint64_t> handles_;
  uint64_t last_handle_ = 0;
  uint32_t last_label_ = 0;
};

}  // namespace memreplay
