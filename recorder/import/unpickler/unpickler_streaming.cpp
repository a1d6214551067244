// The unpickler handing device traces to the DeviceTraceSink as they are appended, and recycling
// the entries nothing else refers to (unpickler.h; the contract is DeviceTraceSink's).
#include "recorder/import/unpickler/unpickler.h"

#include <string>

namespace memreplay::pickle {

void Unpickler::report_progress() {
  next_progress_ = pos_ + kProgressBytes;
  if (options_.progress) options_.progress(pos_);
}

std::optional<uint32_t> Unpickler::streamed_index(Ref target, size_t p) {
  const auto* streamed = find_streamed(target);
  std::optional<uint32_t> k = device_list_index(p);
  if (streamed != nullptr) {
    if (!k || *k != streamed->second)
      fail_here("a device trace list is extended from an unexpected place (not a pickle torch writes)");
    return k;
  }
  // A list with items already, or referred to twice, is read from the tree as usual.
  if (!k || tree_.containers_[target].count != 0 || container_memo_[target] == kShared) return std::nullopt;
  streamed_.emplace_back(target, *k);
  return k;
}

std::optional<uint32_t> Unpickler::device_list_index(size_t p) const {
  if (marks_.empty() || marks_.front() != 1 || !is_container(stack_[0], Kind::dict) || p < 3) return std::nullopt;
  size_t outer = 0, offset = 0;  // the outer list's stack position; the target's place in its batch
  if (marks_.size() == 2 && marks_.back() <= p && marks_.back() >= 3) {
    outer = marks_.back() - 1;  // MARK lists... APPENDS into the outer list
    offset = p - marks_.back();
  } else if (marks_.size() == 1) {
    outer = p - 1;  // a single list, APPENDed
  } else {
    return std::nullopt;
  }
  const Ref key = stack_[outer - 1];
  if (outer < 2 || (outer - 1 - 1) % 2 != 0 || !is_container(stack_[outer], Kind::list) ||
      Value(&tree_, key).kind() != Kind::str || Value(&tree_, key).as_str() != "device_traces")
    return std::nullopt;
  const uint64_t k = tree_.containers_[stack_[outer]].count + offset;
  if (k > std::numeric_limits<uint32_t>::max()) return std::nullopt;
  return static_cast<uint32_t>(k);
}

void Unpickler::hand_over(uint32_t k, size_t from) {
  const std::span<const Ref> items(stack_.data() + from, stack_.size() - from);
  options_.device_traces->take(k, tree_, items);
  for (const Ref ref : items) {
    if ((ref & Tree::kScalarBit) || container_memo_[ref] == kShared || find_streamed(ref) != nullptr) continue;
    const Tree::Container& c = tree_.containers_[ref];
    if (c.layout == Tree::Layout::shaped && c.count / 2 <= kMaxRecycledPairs)
      free_values_[c.count / 2].push_back(c.begin);
    else if (c.layout == Tree::Layout::runs)
      continue;  // its run chain is not reused: keep the slot
    if (container_memo_[ref] != kNoMemo) memo_.set(container_memo_[ref], kTakenMemo);
    container_memo_[ref] = kShared;  // until add_container reuses it
    free_containers_.push_back(ref);
  }
  stack_.resize(from);
}

void Unpickler::check_streamed_lists() const {
  const Value root(&tree_, tree_.root_);
  const std::optional<Value> outer = root.is(Kind::dict) ? root.get("device_traces") : std::nullopt;
  size_t matched = 0;
  if (outer && outer->is(Kind::list)) {
    uint32_t k = 0;
    for (const Value list : outer->items()) {
      const auto* s = find_streamed(list.id());
      if (s != nullptr) {
        if (s->second != k) break;
        ++matched;
      }
      ++k;
    }
  }
  if (matched != streamed_.size())
    fail(op_pos_, "device trace lists are not where a snapshot has them (not a pickle torch writes)");
}

}  // namespace memreplay::pickle
