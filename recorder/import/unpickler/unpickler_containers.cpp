// The unpickler building the Tree's containers (unpickler.h; the layouts are Tree::Container's).
#include "recorder/import/unpickler/unpickler.h"

#include <string>

namespace memreplay::pickle {

void Unpickler::append_items(Ref container, size_t from) {
  const auto count = static_cast<uint32_t>(stack_.size() - from);
  if (count == 0) return;
  Tree::Container& c = tree_.containers_[container];
  if (c.count == 0 && c.kind == Kind::dict) {
    fill_shaped(c, from, count);
  } else {
    if (c.layout == Tree::Layout::shaped) unshape(c);
    append_run(c, from, count);
  }
  stack_.resize(from);
}

// Whether the keys at shape_keys_[shape.begin, ...) are those of stack[from..]'s pairs.
bool Unpickler::shape_matches(const Shape& shape, const Ref* pairs, uint32_t count) const {
  if (shape.pairs != count) return false;
  const Ref* keys = tree_.shape_keys_.data() + shape.begin;
  for (uint32_t i = 0; i < count; ++i)
    if (keys[i] != pairs[2 * i]) return false;
  return true;
}

void Unpickler::fail_room() const {
  fail_here("more than 2^32 items in one tree (not a snapshot's shape, which is streamed)");
}

void Unpickler::fill_shaped(Tree::Container& c, size_t from, uint32_t count) {
  const uint32_t pairs = count / 2;
  const Ref* items = stack_.data() + from;
  auto& children = tree_.children_;
  take_value_run(c, pairs);
  c.layout = Tree::Layout::shaped;
  c.count = count;
  // At most one recent shape has these keys (a shape is added only when none matched), so the
  // last one matched is tried first, copying the values as it compares the keys: consecutive
  // trace entries nearly always share it.
  Ref* values = children.data() + c.begin;
  const Shape& last = recent_shapes_[last_shape_slot_];
  if (last.pairs == pairs) {
    const Ref* keys = tree_.shape_keys_.data() + last.begin;
    uint32_t i = 0;
    for (; i < pairs && keys[i] == items[2 * i]; ++i) values[i] = items[2 * i + 1];
    if (i == pairs) {
      c.extra = last.begin;
      return;
    }
  }
  for (uint32_t i = 0; i < pairs; ++i) values[i] = items[2 * i + 1];
  const Shape* shape = nullptr;
  for (size_t i = 0; i < recent_shapes_.size() && shape == nullptr; ++i)
    if (shape_matches(recent_shapes_[i], items, pairs)) {
      shape = &recent_shapes_[i];
      last_shape_slot_ = i;
    }
  auto& keys = tree_.shape_keys_;
  if (shape == nullptr) {
    last_shape_slot_ = next_shape_slot_++ % recent_shapes_.size();
    Shape& slot = recent_shapes_[last_shape_slot_];
    check_room(keys.size(), pairs);
    slot = {static_cast<uint32_t>(keys.size()), pairs};
    for (uint32_t i = 0; i < pairs; ++i) keys.push_back(items[2 * i]);
    shape = &slot;
  }
  c.extra = shape->begin;
}

void Unpickler::take_value_run(Tree::Container& c, uint32_t pairs) {
  // Which run depends on the number of pairs only.
  if (streaming_ && pairs <= kMaxRecycledPairs && !free_values_[pairs].empty()) {  // a taken entry's run
    c.begin = free_values_[pairs].back();
    free_values_[pairs].pop_back();
    return;
  }
  auto& children = tree_.children_;
  check_room(children.size(), pairs);
  c.begin = static_cast<uint32_t>(children.size());
  children.resize(children.size() + pairs);
}

void Unpickler::unshape(Tree::Container& c) {
  auto& children = tree_.children_;
  check_room(children.size(), c.count);
  const auto begin = static_cast<uint32_t>(children.size());
  for (uint32_t i = 0; i < c.count / 2; ++i) {
    const Ref value = children[c.begin + i];
    children.push_back(tree_.shape_keys_[c.extra + i]);
    children.push_back(value);
  }
  c.layout = Tree::Layout::one_run;
  c.begin = begin;
}

void Unpickler::append_run(Tree::Container& c, size_t from, uint32_t count) {
  auto& segments = tree_.segments_;
  auto& children = tree_.children_;
  check_room(children.size(), count);
  check_room(segments.size(), 2);
  const auto end = static_cast<uint32_t>(children.size());
  if (c.count == 0) {
    c.begin = end;
  } else if (c.layout == Tree::Layout::one_run) {
    if (c.begin + c.count != end) {  // another container's items came in between
      c.layout = Tree::Layout::runs;
      c.extra = static_cast<uint32_t>(segments.size());
      segments.push_back({c.begin, c.count, c.extra + 1});
      segments.push_back({end, 0, Tree::kNoSegment});
      c.begin = c.extra + 1;
    }
  } else if (segments[c.begin].begin + segments[c.begin].count != end) {
    const auto next = static_cast<uint32_t>(segments.size());
    segments[c.begin].next = next;
    segments.push_back({end, 0, Tree::kNoSegment});  // may move `segments`: index, don't hold
    c.begin = next;
  }
  if (c.layout == Tree::Layout::runs) segments[c.begin].count += count;
  c.count += count;
  children.insert(children.end(), stack_.data() + from, stack_.data() + stack_.size());
}

void Unpickler::collapse(Kind kind, size_t from) {
  if (kind == Kind::dict && (stack_.size() - from) % 2 != 0) fail_here("odd number of stack items for a dict");
  const Ref c = add_container(kind);
  append_items(c, from);
  push(c);
}

void Unpickler::fail_target(Kind kind, Kind expected) const {
  fail_here("target is a " + std::string(kind_name(kind)) + ", expected a " + std::string(kind_name(expected)));
}

void Unpickler::extend(Kind expected, size_t from) {
  if (from <= floor() || from > stack_.size()) fail_here("no target object on the stack");
  const Ref target = stack_[from - 1];
  const Kind kind = Value(&tree_, target).kind();
  if (kind != expected || (target & Tree::kScalarBit)) fail_target(kind, expected);
  if (expected == Kind::dict && (stack_.size() - from) % 2 != 0) fail_here("odd number of stack items for a dict");
  if (streaming_ && expected == Kind::list) {
    if (pos_ >= next_progress_) report_progress();
    if (const std::optional<uint32_t> k = streamed_index(target, from - 1)) {
      hand_over(*k, from);
      return;
    }
  }
  append_items(target, from);
}

}  // namespace memreplay::pickle
