// What the snapshot importer (pytorch_snapshot_importer.cpp) reads trace entries with: their keys
// and actions classified once per pickle node (snapshot pickles memoize every key and action
// string, so a few nodes answer millions of lookups), and stream handles as small labels. The
// value type V is pickle::Value or any type with its interface (snapshot_tree_reader.h).
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "proto/event.h"
#include "recorder/import/unpickler/pickle_reader.h"

namespace memreplay::snapshot_entry {

using pickle::Kind;
using pickle::Value;

// --- trace entry keys and actions ---

enum class Field : uint8_t { other, action, addr, size, stream, time_us, frames, device_free, user_metadata };
constexpr size_t kFieldCount = 9;

template <class V = Value>
Field classify_key(V key) {
  if (!key.is(Kind::str)) return Field::other;
  const std::string_view k = key.as_str();
  if (k == "action") return Field::action;
  if (k == "addr") return Field::addr;
  if (k == "size") return Field::size;
  if (k == "stream") return Field::stream;
  if (k == "time_us") return Field::time_us;
  if (k == "frames") return Field::frames;
  if (k == "device_free") return Field::device_free;
  if (k == "user_metadata") return Field::user_metadata;
  return Field::other;
}

// 0 = not an action we know. 32 bits, though an EventKind fits in 8: the reader keeps the kind on
// the stack, and GCC stored it as a byte and reloaded it as 4 bytes (a store-forwarding stall
// per entry).
template <class V = Value>
uint32_t classify_action(V action) {
  if (!action.is(Kind::str)) return 0;
  const std::string_view a = action.as_str();
  if (a == "user_defined") return static_cast<uint32_t>(EventKind::annotation);  // ≈2.4 markers
  const auto kind = event_kind_from_name(a);
  // Only PyTorch's own actions: the rest of our vocabulary never appears in a snapshot.
  if (!kind || static_cast<uint32_t>(*kind) > static_cast<uint32_t>(EventKind::oom)) return 0;
  return static_cast<uint32_t>(*kind);
}

// Snapshot pickles memoize every key and action string, so a few nodes answer millions of
// lookups: remember each node's classification in a small direct-mapped cache.
template <typename T, typename V = Value>
class NodeCache {
 public:
  explicit NodeCache(T (*classify)(V)) : classify_(classify) {}
  T get(V v) {
    // Fibonacci hashing: ids are input offsets, whose low bits collide too often.
    Slot& slot = slots_[static_cast<uint32_t>(v.id() * 0x9E3779B1u) >> (32 - kSlotBits)];
    if (slot.id != v.id()) slot = {v.id(), classify_(v)};
    return slot.value;
  }

 private:
  static constexpr unsigned kSlotBits = 6;
  static constexpr size_t kSlots = size_t{1} << kSlotBits;
  using Ref = typename V::RefType;
  struct Slot {
    Ref id = std::numeric_limits<Ref>::max();
    T value{};
  };
  std::array<Slot, kSlots> slots_{};
  T (*classify_)(V);
};

// Stream handles as small labels (TraceStep::stream): a trace uses a handful of streams.
class StreamTable {
 public:
  [[gnu::always_inline]] uint32_t label(uint64_t handle) {
    if (!handles_.empty() && handle == last_handle_) return last_label_;  // nearly always
    return label_by_lookup(handle);
  }
  uint64_t handle(uint64_t label) const { return handles_[label]; }

 private:
  [[gnu::noinline]] uint32_t label_by_lookup(uint64_t handle) {
    const auto [it, inserted] = labels_.try_emplace(handle, static_cast<uint32_t>(handles_.size()));
    if (inserted) handles_.push_back(handle);
    last_handle_ = handle;
    last_label_ = it->second;
    return last_label_;
  }

  std::unordered_map<uint64_t, uint32_t> labels_;
  std::vector<uint64_t> handles_;
  uint64_t last_handle_ = 0;
  uint32_t last_label_ = 0;
};

}  // namespace memreplay::snapshot_entry
