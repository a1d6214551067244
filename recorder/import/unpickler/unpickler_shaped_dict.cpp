// The unpickler reading a trace entry's dict in one pass over its bytes (unpickler.h). A snapshot
// is millions of dicts with the same keys, each pickled by CPython as
//   EMPTY_DICT MEMOIZE MARK (BINGET key, value)... SETITEMS
// and executed opcode by opcode that is a dispatch, a stack push and a pop per opcode, then a key
// comparison per pair in fill_shaped. Read here, it is one loop that compares each key as it
// reads it and keeps the values in registers until the dict is built.
#include <algorithm>
#include <array>

#include "recorder/import/unpickler/unpickler.h"

namespace memreplay::pickle {

// A dict whose keys are the last shape's (recent_shapes_[last_shape_slot_]) in its order, fetched
// from the memo, and whose values are ints that fit in 8 bytes, None, bools, short strs (memoized
// or not) or memo GETs, all of its bytes there: built exactly as run() would build it from the
// same opcodes (the container, its memo slots, the value run, the shape, a fetched container
// marked shared), with nothing committed before its SETITEMS has been read. Anything else returns
// false with nothing changed that run() would not change the same way again (a fetched container
// marked shared), and run() executes the opcodes one by one from EMPTY_DICT, errors included.
bool Unpickler::read_shaped_dict() {
  const Shape& shape = recent_shapes_[last_shape_slot_];
  const uint32_t pairs = shape.pairs;
  // A memo with gaps (a hostile PUT far ahead) numbers MEMOIZE differently: the generic way.
  if (pairs == 0 || pairs > kMaxOnePassPairs || memo_count_ != memo_.size()) return false;
  const auto* const data = reinterpret_cast<const uint8_t*>(data_.data());
  const size_t end = data_.size();
  size_t pos = op_pos_ + 1;
  if (end - pos < 2 || data[pos] != MEMOIZE || data[pos + 1] != MARK) return false;
  pos += 2;

  const Ref* const keys = tree_.shape_keys_.data() + shape.begin;
  const uint64_t memo_size = memo_.size();  // the dict's own slot is memo_size, not stored yet
  std::array<Ref, kMaxOnePassPairs> values;
  std::array<Ref, kMaxOnePassPairs> memoized;  // strs memoized in the dict, in order
  uint32_t memoized_count = 0;
  for (uint32_t i = 0; i < pairs; ++i) {
    // The key: a GET of the shape's i-th key (a str, never a container: those the generic way).
    if (end - pos < 5) return false;
    Ref key = kUnsetMemo;
    if (data[pos] == BINGET) {
      key = memo_size > data[pos + 1] ? memo_[data[pos + 1]] : kUnsetMemo;
      pos += 2;
    } else if (data[pos] == LONG_BINGET) {
      const uint64_t index = detail::load_le(data_.data() + pos + 1, 4);
      key = index < memo_size ? memo_[index] : kUnsetMemo;
      pos += 5;
    }
    if (key != keys[i] || key == kUnsetMemo || !(key & Tree::kScalarBit)) return false;

    // The value.
    const size_t left = end - pos;
    if (left < 2) return false;
    const Ref scalar = Tree::kScalarBit | pos;
    switch (data[pos]) {
      case BININT1: values[i] = scalar, pos += 2; break;
      case BININT2:
        if (left < 3) return false;
        values[i] = scalar, pos += 3;
        break;
      case BININT:
        if (left < 5) return false;
        values[i] = scalar, pos += 5;
        break;
      case LONG1:  // longer than 8 bytes: its sign extension is checked the generic way
        if (data[pos + 1] > 8 || size_t{data[pos + 1]} + 2 > left) return false;
        values[i] = scalar, pos += 2 + size_t{data[pos + 1]};
        break;
      case NONE:
      case NEWTRUE:
      case NEWFALSE: values[i] = scalar, pos += 1; break;
      case SHORT_BINUNICODE:
        if (size_t{data[pos + 1]} + 2 > left) return false;
        values[i] = scalar, pos += 2 + size_t{data[pos + 1]};
        if (pos < end && data[pos] == MEMOIZE) {  // the memo's next slots, after the dict's own
          memoized[memoized_count++] = scalar;
          ++pos;
        }
        break;
      case BINGET: {
        const Ref ref = fast_get(data[pos + 1], memo_size);
        if (ref == kUnsetMemo) return false;
        values[i] = ref, pos += 2;
        break;
      }
      case LONG_BINGET: {
        if (left < 5) return false;
        const Ref ref = fast_get(detail::load_le(data_.data() + pos + 1, 4), memo_size);
        if (ref == kUnsetMemo) return false;
        values[i] = ref, pos += 5;
        break;
      }
      default: return false;
    }
  }
  if (pos >= end || data[pos] != SETITEMS) return false;

  // Built as EMPTY_DICT, MEMOIZE, MARK, the pairs' opcodes and SETITEMS build it.
  const Ref dict = add_container(Kind::dict);  // at op_pos_, the EMPTY_DICT
  push(dict);
  note_memo(dict, memo_count_);
  memo_.push_back(dict);
  for (uint32_t i = 0; i < memoized_count; ++i) memo_.push_back(memoized[i]);
  memo_count_ += 1 + memoized_count;
  Tree::Container& c = tree_.containers_[dict];
  take_value_run(c, pairs);
  // Two at a time, not std::copy_n: GCC makes that a rep movsq, whose start-up cost per entry
  // was a seventh of this function's time (perf annotate).
  Ref* const run = tree_.children_.data() + c.begin;
  for (uint32_t i = 0; i + 1 < pairs; i += 2) {
    const Ref first = values[i], second = values[i + 1];
    run[i] = first;
    run[i + 1] = second;
  }
  if (pairs % 2 != 0) run[pairs - 1] = values[pairs - 1];
  c.layout = Tree::Layout::shaped;
  c.count = 2 * pairs;
  c.extra = shape.begin;
  pos_ = pos + 1;
  if (options_.dicts_read_in_one_pass != nullptr) ++*options_.dicts_read_in_one_pass;
  return true;
}

}  // namespace memreplay::pickle
