#include "recorder/import/pickle_reader.h"

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <limits>

#include "proto/input_error.h"
#include "recorder/import/pickle_opcodes.h"
#include "recorder/import/pickle_ref_stack.h"

namespace memreplay::pickle {
namespace {

constexpr int kHighestProtocol = 5;

// Scalars are decoded with memcpy into integers (detail::load_le).
static_assert(std::endian::native == std::endian::little, "memreplay reads pickles on little-endian hosts");

constexpr uint32_t kUnsetMemo = std::numeric_limits<uint32_t>::max();
// A memo slot whose object (a streamed trace entry) was handed over and recycled. Containers are
// numbered from 0 and each needs an input byte, so no container of a pickle under 2 GiB has it.
constexpr uint32_t kTakenMemo = Tree::kScalarBit - 1;
// container_memo_ values besides a memo index.
constexpr uint32_t kNoMemo = std::numeric_limits<uint32_t>::max();
constexpr uint32_t kShared = kNoMemo - 1;  // referred to more than once: never recycled
// Shaped dicts of up to this many pairs have their value runs recycled (trace entries have 5-9).
constexpr uint32_t kMaxRecycledPairs = 16;
constexpr uint64_t kProgressBytes = uint64_t{64} << 20;
constexpr uint64_t kGrowingWindow = uint64_t{1} << 20;

}  // namespace

// The pickle virtual machine, minus everything that runs code. Python's semantics are kept
// where they matter for well-formed input: MARK hides the items below it from ordinary opcodes,
// the memo is a dict keyed by index, STOP returns the top of the stack.
class Unpickler {
 public:
  Unpickler(std::string_view data, const std::string& file, Tree& tree, const UnpickleOptions& options)
      : data_(data), growing_(options.growing), file_(file), tree_(tree), options_(options),
        streaming_(options.device_traces != nullptr) {}

  void run() {
    // Scalar references are input offsets below kScalarBit.
    if (data_.size() >= Tree::kScalarBit) fail(0, "pickles of 2 GiB or more are not supported");
    tree_.data_ = data_;
    // Snapshot pickles hold one container per 52-72 input bytes and one item per 6.6-9: reserve
    // for the densest, so the big arrays never move while growing. Streamed, the tree holds
    // little but the segments and frames.
    if (!streaming_) {
      tree_.containers_.reserve(data_.size() / 48 + 16);
      tree_.container_offsets_.reserve(data_.size() / 48 + 16);
      tree_.children_.reserve(data_.size() / 6 + 16);
    }
    memo_.reserve(data_.size() / 32 + 16);
    for (;;) {
      if (pos_ >= data_.size() && !more(1)) fail(pos_, "pickle ends without STOP");
      op_pos_ = pos_;
      op_ = static_cast<uint8_t>(data_[pos_++]);
      // The opcodes that make up nearly all of a snapshot pickle, dispatched here so that their
      // handlers inline into this loop; step() has the rest.
      switch (op_) {
        case LONG_BINGET: memo_get(read_le(4)); break;
        case BINGET: memo_get(read_le(1)); break;
        case MEMOIZE: memo_put(memo_count_); break;
        case LONG1: push_long(read_le(1)); break;
        case BININT1: push_scalar(1); break;
        case BININT2: push_scalar(2); break;
        case BININT: push_scalar(4); break;
        case SHORT_BINUNICODE:
          push_scalar(read_le(1));
          take_next_memoize();
          break;
        case MARK: marks_.push_back(stack_.size()); break;
        case EMPTY_DICT:  // in snapshots always followed by MEMOIZE, MARK
          push(add_container(Kind::dict));
          if (take_next_memoize() && next_op_is(MARK)) {
            ++pos_;
            marks_.push_back(stack_.size());
          }
          break;
        case SETITEMS: extend(Kind::dict, pop_mark()); break;
        case STOP:
          require(1);
          tree_.root_ = stack_.back();
          if (!streamed_.empty()) check_streamed_lists();
          return;  // like Python, trailing bytes after STOP are not looked at
        default: step(); break;
      }
    }
  }

 private:
  [[noreturn, gnu::cold, gnu::noinline]] void fail(uint64_t at, const std::string& what) const {
    throw InputError::at_byte(file_, at, what);
  }
  [[noreturn, gnu::cold, gnu::noinline]] void fail_here(const std::string& what) const {
    fail(op_pos_, op_label(op_) + ": " + what);
  }
  [[noreturn, gnu::cold, gnu::noinline]] void fail_truncated(uint64_t needed) const {
    fail_here("pickle truncated: needs " + std::to_string(needed) + " more bytes, " +
              std::to_string(data_.size() - pos_) + " left");
  }

  // --- input ---
  // The input is short of `n` bytes at pos_: waits for a growing input to have them (the bytes
  // already there stay where they are). False when it never will.
  [[gnu::noinline]] bool more(uint64_t n) {
    if (growing_ == nullptr) return false;
    const uint64_t want = n > UINT64_MAX - pos_ ? UINT64_MAX : pos_ + n;
    const uint64_t have = growing_->wait_for(want);
    if (have >= Tree::kScalarBit) fail(0, "pickles of 2 GiB or more are not supported");
    // At most kGrowingWindow past what is needed: the next call, and with it the news of a
    // decoder that failed (a bomb past its ceiling), is never more than that far away.
    const uint64_t seen = have < want ? have : std::min(have, want + kGrowingWindow);
    data_ = std::string_view(growing_->data(), static_cast<size_t>(seen));
    tree_.data_ = data_;
    if (have < want) growing_ = nullptr;  // complete
    return have >= want;
  }
  [[gnu::always_inline]] const char* take(uint64_t n) {
    if (n > data_.size() - pos_ && !more(n)) fail_truncated(n);
    const char* p = data_.data() + pos_;
    pos_ += n;
    return p;
  }
  [[gnu::always_inline]] uint64_t read_le(unsigned n) { return detail::load_le(take(n), n); }
  std::string_view read_line() {  // protocol-0 arguments end with '\n'
    size_t nl = data_.find('\n', pos_);
    while (nl == std::string_view::npos) {
      const size_t searched = data_.size();
      if (!more(searched - pos_ + 1)) fail_here("pickle truncated: argument has no end of line");
      nl = data_.find('\n', searched);
    }
    std::string_view line = data_.substr(pos_, nl - pos_);
    pos_ = nl + 1;
    return line;
  }
  int64_t parse_decimal(std::string_view text) {
    if (!text.empty() && text.front() == '+') text.remove_prefix(1);
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec == std::errc::result_out_of_range) fail_here("integer does not fit in 64 bits");
    if (ec != std::errc() || end != text.data() + text.size() || text.empty())
      fail_here("malformed decimal argument '" + std::string(text.substr(0, 40)) + "'");
    return v;
  }
  // The argument of PUT and GET (protocol 0): a memo index in decimal.
  uint64_t read_text_memo_index() {
    const int64_t index = parse_decimal(read_line());
    if (index < 0) fail_here("negative memo index");
    return static_cast<uint64_t>(index);
  }
  // LONG1/LONG4 payload: little-endian two's complement. Encodings longer than 8 bytes are legal
  // when the extra bytes only extend the sign; anything else does not fit in an int64.
  [[gnu::always_inline]] void check_long(const char* bytes, uint64_t n) {
    if (n > 8) check_long_sign_extension(bytes, n);
  }
  void check_long_sign_extension(const char* bytes, uint64_t n) {
    const auto* p = reinterpret_cast<const uint8_t*>(bytes);
    const bool negative = (p[n - 1] & 0x80) != 0;
    bool fits = ((p[7] & 0x80) != 0) == negative;
    for (uint64_t i = 8; i < n && fits; ++i) fits = p[i] == (negative ? 0xff : 0x00);
    if (!fits) fail_here("integer of " + std::to_string(n) + " bytes does not fit in 64 bits");
  }

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
      fail_here("needs " + std::to_string(n) + " stack item(s) above the last MARK, found " +
                std::to_string(have));
  }
  [[gnu::always_inline]] size_t pop_mark() {
    if (marks_.empty()) fail_here("no MARK to pop");
    const size_t mark = marks_.back();
    marks_.pop_back();
    return mark;
  }
  [[gnu::always_inline]] void push(uint32_t ref) { stack_.push(ref); }
  // A scalar is referenced by its opcode's offset; its `argument_bytes` are checked to be there
  // (str and bytes: the length read from the opcode's argument).
  [[gnu::always_inline]] void push_scalar(uint64_t argument_bytes) {
    take(argument_bytes);
    push(Tree::kScalarBit | static_cast<uint32_t>(op_pos_));
  }
  // LONG1/LONG4 with an n-byte payload.
  [[gnu::always_inline]] void push_long(uint64_t n) {
    check_long(take(n), n);
    push(Tree::kScalarBit | static_cast<uint32_t>(op_pos_));
  }
  [[gnu::always_inline]] uint32_t add_container(Kind kind) {
    if (streaming_ && !free_containers_.empty()) {
      const uint32_t c = free_containers_.back();
      free_containers_.pop_back();
      tree_.containers_[c] = {kind, Tree::Layout::one_run, 0, 0, 0};
      tree_.container_offsets_[c] = static_cast<uint32_t>(op_pos_);
      container_memo_[c] = kNoMemo;
      return c;
    }
    tree_.containers_.push_back({kind, Tree::Layout::one_run, 0, 0, 0});
    tree_.container_offsets_.push_back(static_cast<uint32_t>(op_pos_));
    if (streaming_) container_memo_.push_back(kNoMemo);
    return static_cast<uint32_t>(tree_.containers_.size() - 1);
  }

  // Moves stack[from..] to the end of `container`'s items (see Tree::Container for the layouts).
  void append_items(uint32_t container, size_t from) {
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

  // A dict's first batch: its values go to children_, its keys to a shape it shares with a
  // recent dict that had the same keys in the same order.
  void fill_shaped(Tree::Container& c, size_t from, uint32_t count) {
    const uint32_t pairs = count / 2;
    auto& keys = tree_.shape_keys_;
    const Shape* shape = nullptr;
    for (const Shape& s : recent_shapes_) {
      if (s.pairs != pairs) continue;
      uint32_t i = 0;
      while (i < pairs && keys[s.begin + i] == stack_[from + 2 * i]) ++i;
      if (i == pairs) {
        shape = &s;
        break;
      }
    }
    if (shape == nullptr) {
      Shape& slot = recent_shapes_[next_shape_slot_++ % recent_shapes_.size()];
      slot = {static_cast<uint32_t>(keys.size()), pairs};
      for (uint32_t i = 0; i < pairs; ++i) keys.push_back(stack_[from + 2 * i]);
      shape = &slot;
    }
    auto& children = tree_.children_;
    c.layout = Tree::Layout::shaped;
    c.extra = shape->begin;
    c.count = count;
    if (streaming_ && pairs <= kMaxRecycledPairs && !free_values_[pairs].empty()) {  // a taken entry's run
      c.begin = free_values_[pairs].back();
      free_values_[pairs].pop_back();
      for (uint32_t i = 0; i < pairs; ++i) children[c.begin + i] = stack_[from + 2 * i + 1];
      return;
    }
    c.begin = static_cast<uint32_t>(children.size());
    for (uint32_t i = 0; i < pairs; ++i) children.push_back(stack_[from + 2 * i + 1]);
  }

  // A shaped dict that gets a second batch goes back to interleaved keys and values, copied to
  // a fresh run (at most once per dict, so memory stays linear in the input).
  void unshape(Tree::Container& c) {
    auto& children = tree_.children_;
    const auto begin = static_cast<uint32_t>(children.size());
    for (uint32_t i = 0; i < c.count / 2; ++i) {
      const uint32_t value = children[c.begin + i];
      children.push_back(tree_.shape_keys_[c.extra + i]);
      children.push_back(value);
    }
    c.layout = Tree::Layout::one_run;
    c.begin = begin;
  }

  // Items appended as runs: extends the last run when it ends where children_ ends, else starts
  // a new one (moving a one_run container to the runs layout).
  void append_run(Tree::Container& c, size_t from, uint32_t count) {
    auto& segments = tree_.segments_;
    auto& children = tree_.children_;
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
  // A new container holding stack[from..], which it replaces on the stack.
  void collapse(Kind kind, size_t from) {
    if (kind == Kind::dict && (stack_.size() - from) % 2 != 0)
      fail_here("odd number of stack items for a dict");
    const uint32_t c = add_container(kind);
    append_items(c, from);
    push(c);
  }
  // APPEND(S), SETITEM(S), ADDITEMS: items from `from` go into the object just below them.
  void extend(Kind expected, size_t from) {
    if (from <= floor() || from > stack_.size()) fail_here("no target object on the stack");
    const uint32_t target = stack_[from - 1];
    const Kind kind = Value(&tree_, target).kind();
    if (kind != expected || (target & Tree::kScalarBit))
      fail_here("target is a " + std::string(kind_name(kind)) + ", expected a " +
                std::string(kind_name(expected)));
    if (expected == Kind::dict && (stack_.size() - from) % 2 != 0)
      fail_here("odd number of stack items for a dict");
    if (streaming_ && expected == Kind::list) {
      if (pos_ >= next_progress_) report_progress();
      if (const std::optional<uint32_t> k = streamed_index(target, from - 1)) {
        hand_over(*k, from);
        return;
      }
    }
    append_items(target, from);
  }

  // --- streaming device traces (see DeviceTraceSink) ---

  void report_progress() {
    next_progress_ = pos_ + kProgressBytes;
    if (options_.progress) options_.progress(pos_);
  }
  bool is_container(uint32_t ref, Kind kind) const {
    return !(ref & Tree::kScalarBit) && tree_.containers_[ref].kind == kind;
  }
  const std::pair<uint32_t, uint32_t>* find_streamed(uint32_t container) const {
    for (const auto& s : streamed_)
      if (s.first == container) return &s;
    return nullptr;
  }
  // k when the list `target`, at stack position p, is root["device_traces"][k] by its place on
  // the stack: [root dict, MARK, (key, value)..., 'device_traces', outer list, (MARK,) lists...].
  std::optional<uint32_t> streamed_index(uint32_t target, size_t p) {
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
  std::optional<uint32_t> device_list_index(size_t p) const {
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
    const uint32_t key = stack_[outer - 1];
    if (outer < 2 || (outer - 1 - 1) % 2 != 0 || !is_container(stack_[outer], Kind::list) ||
        Value(&tree_, key).kind() != Kind::str || Value(&tree_, key).as_str() != "device_traces")
      return std::nullopt;
    const uint64_t k = tree_.containers_[stack_[outer]].count + offset;
    if (k >= Tree::kScalarBit) return std::nullopt;
    return static_cast<uint32_t>(k);
  }
  // Gives stack[from..] to the sink, then recycles the entry dicts nothing else refers to.
  void hand_over(uint32_t k, size_t from) {
    const std::span<const uint32_t> items(stack_.data() + from, stack_.size() - from);
    options_.device_traces->take(k, tree_, items);
    for (const uint32_t ref : items) {
      if ((ref & Tree::kScalarBit) || container_memo_[ref] == kShared || find_streamed(ref) != nullptr) continue;
      const Tree::Container& c = tree_.containers_[ref];
      if (c.layout == Tree::Layout::shaped && c.count / 2 <= kMaxRecycledPairs) free_values_[c.count / 2].push_back(c.begin);
      else if (c.layout == Tree::Layout::runs) continue;  // its run chain is not reused: keep the slot
      if (container_memo_[ref] != kNoMemo) memo_[container_memo_[ref]] = kTakenMemo;
      container_memo_[ref] = kShared;  // until add_container reuses it
      free_containers_.push_back(ref);
    }
    stack_.resize(from);
  }
  // At STOP: every streamed list is root["device_traces"][k], and nothing else there.
  void check_streamed_lists() const {
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
  // A container is referred to again (memo GET, DUP): never recycled; a streamed list, refused.
  [[gnu::always_inline]] void note_shared(uint32_t ref) {
    if (!streaming_ || (ref & Tree::kScalarBit)) return;
    if (find_streamed(ref) != nullptr) fail_here("a device trace list is referred to twice (not a pickle torch writes)");
    container_memo_[ref] = kShared;
  }
  [[gnu::always_inline]] void note_memo(uint32_t ref, uint64_t index) {
    if (!streaming_ || (ref & Tree::kScalarBit)) return;
    container_memo_[ref] = container_memo_[ref] == kNoMemo ? static_cast<uint32_t>(index) : kShared;
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
    if (index > data_.size() && !more(index - pos_)) fail_here("memo index " + std::to_string(index) + " is out of range");
    if (index >= memo_.size()) memo_.resize(index + 1, kUnsetMemo);
    if (memo_[index] == kUnsetMemo) ++memo_count_;
    memo_[index] = stack_.back();
  }
  [[gnu::always_inline]] void memo_get(uint64_t index) {
    if (index >= memo_.size() || memo_[index] == kUnsetMemo)
      fail_here("memo index " + std::to_string(index) + " was never stored");
    if (streaming_) {
      if (memo_[index] == kTakenMemo)
        fail_here("memo index " + std::to_string(index) + " refers back to a trace entry (not a pickle torch writes)");
      note_shared(memo_[index]);
    }
    push(memo_[index]);
  }

  [[noreturn]] void refuse_code() {
    fail(op_pos_, "refusing pickle opcode " + op_label(op_) + ": memreplay never imports or calls code");
  }

  void step() {
    switch (op_) {
      // Structure.
      case MARK: marks_.push_back(stack_.size()); break;
      case POP:
        if (stack_.size() > floor()) stack_.pop();
        else if (!marks_.empty()) marks_.pop_back();  // Python pops the MARK itself then
        else fail_here("stack is empty");
        break;
      case POP_MARK: stack_.resize(pop_mark()); break;
      case DUP: require(1); note_shared(stack_.back()); push(stack_.back()); break;
      case PROTO: {
        const uint64_t version = read_le(1);
        if (version > kHighestProtocol) fail_here("unsupported pickle protocol " + std::to_string(version));
        break;
      }
      case FRAME: {  // framing only groups opcodes for buffered reads; check it, then ignore it
        const uint64_t length = read_le(8);
        if (length > data_.size() - pos_ && !more(length)) fail_truncated(length);
        break;
      }

      // Scalars: only checked here, decoded when read (Tree::scalar_*).
      case NONE: case NEWTRUE: case NEWFALSE: case EMPTY_TUPLE: push_scalar(0); break;
      case BININT1: push_scalar(1); break;
      case BININT2: push_scalar(2); break;
      case BININT: push_scalar(4); break;
      case BINFLOAT: push_scalar(8); break;
      case LONG1: push_long(read_le(1)); break;
      case LONG4: {
        const auto n = static_cast<int32_t>(read_le(4));
        if (n < 0) fail_here("negative length");
        push_long(static_cast<uint64_t>(n));
        break;
      }
      case INT: case LONG: {
        std::string_view text = read_line();
        if (op_ == LONG && !text.empty() && text.back() == 'L') text.remove_suffix(1);
        if (!(op_ == INT && (text == "00" || text == "01"))) parse_decimal(text);  // INT 00/01: bools
        push(Tree::kScalarBit | static_cast<uint32_t>(op_pos_));
        break;
      }
      case FLOAT: {
        const std::string_view text = read_line();
        double d = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), d);
        if (ec != std::errc() || end != text.data() + text.size())
          fail_here("malformed float '" + std::string(text.substr(0, 40)) + "'");
        push(Tree::kScalarBit | static_cast<uint32_t>(op_pos_));
        break;
      }
      case SHORT_BINUNICODE: case SHORT_BINSTRING: case SHORT_BINBYTES: push_scalar(read_le(1)); break;
      case BINUNICODE: case BINBYTES: push_scalar(read_le(4)); break;
      case BINUNICODE8: case BINBYTES8: case BYTEARRAY8: push_scalar(read_le(8)); break;
      case BINSTRING: {
        const auto n = static_cast<int32_t>(read_le(4));
        if (n < 0) fail_here("negative length");
        push_scalar(static_cast<uint64_t>(n));
        break;
      }
      case READONLY_BUFFER: require(1); break;  // only marks a buffer read-only

      // Containers.
      case EMPTY_LIST: push(add_container(Kind::list)); break;
      case EMPTY_DICT: push(add_container(Kind::dict)); break;
      case EMPTY_SET: push(add_container(Kind::set)); break;
      case TUPLE1: require(1); collapse(Kind::tuple, stack_.size() - 1); break;
      case TUPLE2: require(2); collapse(Kind::tuple, stack_.size() - 2); break;
      case TUPLE3: require(3); collapse(Kind::tuple, stack_.size() - 3); break;
      case TUPLE: collapse(Kind::tuple, pop_mark()); break;
      case LIST: collapse(Kind::list, pop_mark()); break;
      case DICT: collapse(Kind::dict, pop_mark()); break;
      case FROZENSET: collapse(Kind::set, pop_mark()); break;
      case APPEND: require(2); extend(Kind::list, stack_.size() - 1); break;
      case APPENDS: extend(Kind::list, pop_mark()); break;
      case SETITEM: require(3); extend(Kind::dict, stack_.size() - 2); break;
      case SETITEMS: extend(Kind::dict, pop_mark()); break;
      case ADDITEMS: extend(Kind::set, pop_mark()); break;

      // Memo.
      case MEMOIZE: memo_put(memo_count_); break;
      case BINPUT: memo_put(read_le(1)); break;
      case LONG_BINPUT: memo_put(read_le(4)); break;
      case PUT: memo_put(read_text_memo_index()); break;
      case BINGET: memo_get(read_le(1)); break;
      case LONG_BINGET: memo_get(read_le(4)); break;
      case GET: memo_get(read_text_memo_index()); break;

      // Everything that imports, calls or looks up objects by reference.
      case GLOBAL: case STACK_GLOBAL: case REDUCE: case BUILD: case INST: case OBJ:
      case NEWOBJ: case NEWOBJ_EX: case EXT1: case EXT2: case EXT4: case PERSID:
      case BINPERSID:
        refuse_code();

      // Plain data we still do not read.
      case STRING: case UNICODE:
        fail(op_pos_, "unsupported pickle opcode " + op_label(op_) +
                          ": protocol-0 text strings are not read (pickle with protocol 2 or newer)");
      case NEXT_BUFFER:
        fail(op_pos_, "unsupported pickle opcode " + op_label(op_) + ": out-of-band buffers are not read");
      default:
        fail(op_pos_, "unknown pickle opcode " + op_label(op_));
    }
  }

  std::string_view data_;  // what is there so far, when growing_
  const GrowingInput* growing_;
  const std::string& file_;
  Tree& tree_;
  const UnpickleOptions& options_;
  const bool streaming_;
  // Streaming only: per container, its memo index, kNoMemo or kShared; containers and value runs
  // free for reuse; the streamed lists (container, k).
  std::vector<uint32_t> container_memo_;
  std::vector<uint32_t> free_containers_;
  std::array<std::vector<uint32_t>, kMaxRecycledPairs + 1> free_values_;
  std::vector<std::pair<uint32_t, uint32_t>> streamed_;
  uint64_t next_progress_ = kProgressBytes;
  size_t pos_ = 0;
  size_t op_pos_ = 0;
  uint8_t op_ = 0;
  RefStack stack_;
  std::vector<size_t> marks_;
  std::vector<uint32_t> memo_;
  uint64_t memo_count_ = 0;
  // Key lists of the last few dicts (see fill_shaped): snapshots interleave a few dict shapes
  // (trace entries, frames, blocks).
  struct Shape {
    uint32_t begin = 0;
    uint32_t pairs = 0xffffffffu;
  };
  std::array<Shape, 4> recent_shapes_{};
  size_t next_shape_slot_ = 0;
};

Tree unpickle(std::string_view data, const std::string& file, const UnpickleOptions& options) {
  Tree tree;
  Unpickler(data, file, tree, options).run();
  return tree;
}

}  // namespace memreplay::pickle
