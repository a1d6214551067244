// The unpickler's machine (the contract is pickle_reader.h's): one class, its parts in files by
// responsibility. The hot paths of each part are defined here, in the class, so that they inline
// into the opcode loop; the rest is in
//   pickle_reader.cpp          the opcode loops (run, run_scalar_ops, step) and unpickle()
//   unpickler_input.cpp        reading the input, whole or growing: bytes, lines, numbers, errors
//   unpickler_containers.cpp   the Tree's containers and their layouts (Tree::Container)
//   unpickler_streaming.cpp    device traces handed to the DeviceTraceSink, entries recycled
//   unpickler_shaped_dict.cpp  a trace entry's dict read in one pass (read_shaped_dict)
// Internal to recorder/import.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "recorder/import/unpickler/pickle_memo.h"
#include "recorder/import/unpickler/pickle_opcodes.h"
#include "recorder/import/unpickler/pickle_reader.h"
#include "recorder/import/unpickler/pickle_ref_stack.h"

namespace memreplay::pickle {

// The pickle virtual machine, minus everything that runs code. Python's semantics are kept
// where they matter for well-formed input: MARK hides the items below it from ordinary opcodes,
// the memo is a dict keyed by index, STOP returns the top of the stack.
class Unpickler {
 public:
  Unpickler(std::string_view data, const std::string& file, Tree& tree, const UnpickleOptions& options)
      : data_(data),
        growing_(options.growing),
        file_(file),
        tree_(tree),
        options_(options),
        streaming_(options.device_traces != nullptr),
        memo_(file) {}

  void run();

 private:
  // Memo slot values besides a reference.
  static constexpr Ref kUnsetMemo = PickleMemo::kUnset;
  // A memo slot whose object (a streamed trace entry) was handed over and recycled. Containers are
  // numbered from 0 and each needs an input byte, so no container of any pickle has it.
  static constexpr Ref kTakenMemo = Tree::kScalarBit - 1;
  // container_memo_ values besides a memo index.
  static constexpr uint64_t kNoMemo = std::numeric_limits<uint64_t>::max();
  static constexpr uint64_t kShared = kNoMemo - 1;  // referred to more than once: never recycled
  // Shaped dicts of up to this many pairs have their value runs recycled (trace entries have 5-9).
  static constexpr uint32_t kMaxRecycledPairs = 16;
  // Dicts of up to this many pairs are read in one pass (read_shaped_dict).
  static constexpr uint32_t kMaxOnePassPairs = kMaxRecycledPairs;
  static constexpr uint64_t kProgressBytes = uint64_t{64} << 20;
  static constexpr uint64_t kGrowingWindow = uint64_t{1} << 20;

  [[noreturn, gnu::cold, gnu::noinline]] void fail(uint64_t at, const std::string& what) const;
  [[noreturn, gnu::cold, gnu::noinline]] void fail_here(const std::string& what) const;
  // For a literal: the std::string is then built in the cold function, not in the hot caller,
  // whose frame and saved registers it would otherwise enlarge.
  [[noreturn, gnu::cold, gnu::noinline]] void fail_here(const char* what) const;
  [[noreturn, gnu::cold, gnu::noinline]] void fail_truncated(uint64_t needed) const;

  // --- input ---
  // The input is short of `n` bytes at pos_: waits for a growing input to have them (the bytes
  // already there stay where they are). False when it never will.
  [[gnu::noinline]] bool more(uint64_t n);
  [[gnu::always_inline]] const char* take(uint64_t n) {
    if (n > data_.size() - pos_ && !more(n)) fail_truncated(n);
    const char* p = data_.data() + pos_;
    pos_ += n;
    return p;
  }
  [[gnu::always_inline]] uint64_t read_le(unsigned n) { return detail::load_le(take(n), n); }
  std::string_view read_line();  // protocol-0 arguments end with '\n'
  uint64_t read_length4();  // LONG4's and BINSTRING's signed 4-byte length; a negative one fails
  int64_t parse_decimal(std::string_view text);
  // The argument of PUT and GET (protocol 0): a memo index in decimal.
  uint64_t read_text_memo_index();
  // LONG1/LONG4 payload: little-endian two's complement. Encodings longer than 8 bytes are legal
  // when the extra bytes only extend the sign; anything else does not fit in an int64.
  [[gnu::always_inline]] void check_long(const char* bytes, uint64_t n) {
    if (n > 8) check_long_sign_extension(bytes, n);
  }
  void check_long_sign_extension(const char* bytes, uint64_t n);

  // Python memoizes nearly every str and container right after pushing it. Taking that MEMOIZE
  // (and a MARK after a new dict) here saves a dispatch, the costliest part of a cheap opcode.
  // Neither can fail at this point (the value is on the stack), so error offsets stay exact.
  [[gnu::always_inline]] bool next_op_is(uint8_t op) {
    return (pos_ < data_.size() || more(1)) && static_cast<uint8_t>(data_[pos_]) == op;
  }
  [[gnu::always_inline]] bool take_next_memoize() {
    if (!next_op_is(MEMOIZE)) return false;
    ++pos_;
    memo_put(memo_count_);
    return true;
  }

  // --- stack ---
  [[gnu::always_inline]] size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  [[gnu::always_inline]] void require(size_t n) const {
    const size_t have = stack_.size() - floor();
    if (have < n)
      fail_here("needs " + std::to_string(n) + " stack item(s) above the last MARK, found " + std::to_string(have));
  }
  [[gnu::always_inline]] size_t pop_mark() {
    if (marks_.empty()) fail_here("no MARK to pop");
    const size_t mark = marks_.back();
    marks_.pop_back();
    return mark;
  }
  [[gnu::always_inline]] void push(Ref ref) { stack_.push(ref); }
  // A scalar is referenced by its opcode's offset; its `argument_bytes` are checked to be there
  // (str and bytes: the length read from the opcode's argument).
  [[gnu::always_inline]] void push_scalar(uint64_t argument_bytes) {
    take(argument_bytes);
    push(Tree::kScalarBit | op_pos_);
  }
  // LONG1/LONG4 with an n-byte payload.
  [[gnu::always_inline]] void push_long(uint64_t n) {
    check_long(take(n), n);
    push(Tree::kScalarBit | op_pos_);
  }
  [[gnu::always_inline]] Ref add_container(Kind kind) {
    if (streaming_ && !free_containers_.empty()) {
      const Ref c = free_containers_.back();
      free_containers_.pop_back();
      tree_.containers_[c] = {kind, Tree::Layout::one_run, 0, 0, 0};
      tree_.container_offsets_[c] = op_pos_;
      container_memo_[c] = kNoMemo;
      return c;
    }
    tree_.containers_.push_back({kind, Tree::Layout::one_run, 0, 0, 0});
    tree_.container_offsets_.push_back(op_pos_);
    if (streaming_) container_memo_.push_back(kNoMemo);
    return tree_.containers_.size() - 1;
  }

  // Moves stack[from..] to the end of `container`'s items (see Tree::Container for the layouts).
  void append_items(Ref container, size_t from);

  // A dict's first batch: its values go to children_, its keys to a shape it shares with a
  // recent dict that had the same keys in the same order.
  void fill_shaped(Tree::Container& c, size_t from, uint32_t count);
  // Where a shaped dict's `pairs` values go: a taken entry's run of that length, or a new one.
  void take_value_run(Tree::Container& c, uint32_t pairs);
  // At EMPTY_DICT: the whole dict read in one pass when it has the last shape's keys, else false
  // having done nothing run() would not do again (see unpickler_shaped_dict.cpp).
  bool read_shaped_dict();
  struct Shape;
  bool shape_matches(const Shape& shape, const Ref* pairs, uint32_t count) const;

  // A shaped dict that gets a second batch goes back to interleaved keys and values, copied to
  // a fresh run (at most once per dict, so memory stays linear in the input).
  void unshape(Tree::Container& c);

  // Items appended as runs: extends the last run when it ends where children_ ends, else starts
  // a new one (moving a one_run container to the runs layout).
  void append_run(Tree::Container& c, size_t from, uint32_t count);
  // Refuses a tree of more than 2^32 items (Container counts them in 32 bits): only a pickle of
  // 4 GiB or more, not streamed, has that many.
  void check_room(uint64_t items, uint64_t more) const {
    if (items + more > std::numeric_limits<uint32_t>::max()) fail_room();
  }
  [[noreturn, gnu::cold, gnu::noinline]] void fail_room() const;
  // A new container holding stack[from..], which it replaces on the stack.
  void collapse(Kind kind, size_t from);
  // APPEND(S), SETITEM(S), ADDITEMS: items from `from` go into the object just below them.
  void extend(Kind expected, size_t from);
  // SETITEMS of pairs into a dict with no items yet (every trace entry) goes straight to
  // fill_shaped; anything else, every error included, the way extend goes.
  [[gnu::always_inline]] void set_items(size_t from) {
    const size_t top = stack_.size();
    if (from > floor() && from < top && (top - from) % 2 == 0 && !(stack_[from - 1] & Tree::kScalarBit)) {
      Tree::Container& c = tree_.containers_[stack_[from - 1]];
      if (c.kind == Kind::dict && c.count == 0) {
        fill_shaped(c, from, static_cast<uint32_t>(top - from));
        stack_.resize(from);
        return;
      }
    }
    extend(Kind::dict, from);
  }
  [[noreturn, gnu::cold, gnu::noinline]] void fail_target(Kind kind, Kind expected) const;

  // --- streaming device traces (see DeviceTraceSink) ---

  void report_progress();
  bool is_container(Ref ref, Kind kind) const {
    return !(ref & Tree::kScalarBit) && tree_.containers_[ref].kind == kind;
  }
  const std::pair<Ref, uint32_t>* find_streamed(Ref container) const {
    for (const auto& s : streamed_)
      if (s.first == container) return &s;
    return nullptr;
  }
  // k when the list `target`, at stack position p, is root["device_traces"][k] by its place on
  // the stack: [root dict, MARK, (key, value)..., 'device_traces', outer list, (MARK,) lists...].
  std::optional<uint32_t> streamed_index(Ref target, size_t p);
  std::optional<uint32_t> device_list_index(size_t p) const;
  // Gives stack[from..] to the sink, then recycles the entry dicts nothing else refers to.
  void hand_over(uint32_t k, size_t from);
  // At STOP: every streamed list is root["device_traces"][k], and nothing else there.
  void check_streamed_lists() const;
  // A container is referred to again (memo GET, DUP): never recycled; a streamed list, refused.
  [[gnu::always_inline]] void note_shared(Ref ref) {
    if (!streaming_ || (ref & Tree::kScalarBit)) return;
    if (find_streamed(ref) != nullptr)
      fail_here("a device trace list is referred to twice (not a pickle torch writes)");
    container_memo_[ref] = kShared;
  }
  [[gnu::always_inline]] void note_memo(Ref ref, uint64_t index) {
    if (!streaming_ || (ref & Tree::kScalarBit)) return;
    container_memo_[ref] = container_memo_[ref] == kNoMemo ? index : kShared;
  }

  // --- memo ---
  [[gnu::always_inline]] void memo_put(uint64_t index) {
    require(1);
    note_memo(stack_.back(), index);
    if (index == memo_.size()) {  // the usual case (MEMOIZE, and PUT from any real pickler)
      memo_.push_back(stack_.back());
      ++memo_count_;
      return;
    }
    // Real picklers number memo entries 0, 1, 2...; bounding the index by the input size keeps
    // a hostile PUT from allocating gigabytes.
    if (index > data_.size() && !more(index - pos_))
      fail_here("memo index " + std::to_string(index) + " is out of range");
    if (index >= memo_.size()) memo_.resize(index + 1);
    if (memo_[index] == kUnsetMemo) ++memo_count_;
    memo_.set(index, stack_.back());
  }
  [[gnu::always_inline]] void memo_get(uint64_t index) {
    // One load of the slot: most GETs fetch a key string, a scalar, which is never taken or
    // shared (kTakenMemo has no kScalarBit, kUnsetMemo has it).
    const Ref ref = index < memo_.size() ? memo_[index] : kUnsetMemo;
    if (ref == kUnsetMemo) fail_here("memo index " + std::to_string(index) + " was never stored");
    if (streaming_ && !(ref & Tree::kScalarBit)) {
      if (ref == kTakenMemo)
        fail_here("memo index " + std::to_string(index) + " refers back to a trace entry (not a pickle torch writes)");
      note_shared(ref);
    }
    push(ref);
  }

  // A GET's slot for the fast paths (run_scalar_ops, read_shaped_dict), with the memo's size as
  // they see it: kUnsetMemo where the GET must go the generic way (never stored, a taken entry, a
  // streamed list: memo_get's errors); a container fetched while streaming is noted as shared,
  // as memo_get notes it.
  [[gnu::always_inline]] Ref fast_get(uint64_t index, uint64_t memo_size) {
    const Ref ref = index < memo_size ? memo_[index] : kUnsetMemo;
    if ((ref & Tree::kScalarBit) || !streaming_) return ref;
    if (ref == kTakenMemo || find_streamed(ref) != nullptr) return kUnsetMemo;
    container_memo_[ref] = kShared;
    return ref;
  }

  // From the opcode at op_pos_: a run of the scalar opcodes a trace entry's pairs consist of,
  // executed without leaving a tight loop. See pickle_reader.cpp. False when it executed none.
  bool run_scalar_ops();

  [[noreturn]] void refuse_code();

  void step();

  std::string_view data_;  // what is there so far, when growing_
  const GrowingInput* growing_;
  const std::string& file_;
  Tree& tree_;
  const UnpickleOptions& options_;
  const bool streaming_;
  // Streaming only: per container, its memo index, kNoMemo or kShared; containers and value runs
  // free for reuse; the streamed lists (container, k).
  std::vector<uint64_t> container_memo_;
  std::vector<Ref> free_containers_;
  std::array<std::vector<uint32_t>, kMaxRecycledPairs + 1> free_values_;
  std::vector<std::pair<Ref, uint32_t>> streamed_;
  uint64_t next_progress_ = kProgressBytes;
  size_t pos_ = 0;
  size_t op_pos_ = 0;
  uint8_t op_ = 0;
  RefStack stack_;
  std::vector<size_t> marks_;
  PickleMemo memo_;
  uint64_t memo_count_ = 0;
  // Key lists of the last few dicts (see fill_shaped): snapshots interleave a few dict shapes
  // (trace entries, frames, blocks).
  struct Shape {
    uint32_t begin = 0;
    uint32_t pairs = 0xffffffffu;
  };
  std::array<Shape, 4> recent_shapes_{};
  size_t next_shape_slot_ = 0;
  size_t last_shape_slot_ = 0;  // the one fill_shaped matched or made last
};

}  // namespace memreplay::pickle
