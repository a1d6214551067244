// The unpickler's opcode loop (its parts: unpickler.h) and unpickle().
#include "recorder/import/unpickler/pickle_reader.h"

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <initializer_list>
#include <string>

#include "proto/input_error.h"
#include "recorder/import/unpickler/unpickler.h"

namespace memreplay::pickle {
namespace {

constexpr int kHighestProtocol = 5;
constexpr uint64_t kReservedInputBytes = uint64_t{1} << 30;

// Scalars are decoded with memcpy into integers (detail::load_le).
static_assert(std::endian::native == std::endian::little, "memreplay reads pickles on little-endian hosts");

// A table from opcode byte to Op: `opcodes`, in the order of Op's values after Op::other, to
// those values; every other opcode to Op::other.
template <typename Op>
constexpr std::array<Op, 256> opcode_table(std::initializer_list<uint8_t> opcodes) {
  std::array<Op, 256> table{};  // Op::other
  uint8_t value = 0;
  for (const uint8_t opcode : opcodes) table[opcode] = static_cast<Op>(++value);
  return table;
}

// The opcodes that make up nearly all of a snapshot pickle, numbered densely: run()'s switch on
// them is then one table jump, where a switch on the sparse opcode bytes compiled to four range
// checks before it (a snapshot has about 20 opcodes per trace entry).
enum class HotOp : uint8_t {
  other,
  long_binget,
  binget,
  memoize,
  long1,
  binint1,
  binint2,
  binint,
  short_binunicode,
  mark,
  empty_dict,
  setitems,
  stop,
};
constexpr std::array<HotOp, 256> kHotOps =
    opcode_table<HotOp>({LONG_BINGET, BINGET, MEMOIZE, LONG1, BININT1, BININT2, BININT, SHORT_BINUNICODE, MARK,
                         EMPTY_DICT, SETITEMS, STOP});
static_assert(kHotOps[STOP] == HotOp::stop, "one opcode per HotOp, in its order");

// The opcodes Unpickler::run_scalar_ops executes, densely numbered for the same reason; int1,
// int2 and int4 are 1, 2 and 3 so that their argument is 1 << (value - 1) bytes.
enum class ScalarOp : uint8_t { other, int1, int2, int4, long_binget, binget, long1, short_str };
constexpr std::array<ScalarOp, 256> kScalarOps =
    opcode_table<ScalarOp>({BININT1, BININT2, BININT, LONG_BINGET, BINGET, LONG1, SHORT_BINUNICODE});
static_assert(kScalarOps[SHORT_BINUNICODE] == ScalarOp::short_str, "one opcode per ScalarOp, in its order");

}  // namespace

void Unpickler::run() {
  tree_.data_ = data_;
  // Snapshot pickles hold one container per 52-72 input bytes and one item per 6.6-9: reserve
  // for the densest, so the big arrays never move while growing (up to kReservedInputBytes of
  // input: past that they double, rather than reserve gigabytes for what may be one big bytes
  // object). Streamed, the tree holds little but the segments and frames.
  if (!streaming_) {
    const uint64_t reserved_for = std::min<uint64_t>(data_.size(), kReservedInputBytes);
    tree_.containers_.reserve(reserved_for / 48 + 16);
    tree_.container_offsets_.reserve(reserved_for / 48 + 16);
    tree_.children_.reserve(reserved_for / 6 + 16);
  }
  for (;;) {
    if (pos_ >= data_.size() && !more(1)) fail(pos_, "pickle ends without STOP");
    op_pos_ = pos_;
    op_ = static_cast<uint8_t>(data_[pos_++]);
    // The opcodes that make up nearly all of a snapshot pickle, dispatched here so that their
    // handlers inline into this loop; step() has the rest.
    switch (kHotOps[op_]) {
      case HotOp::long_binget:
        if (!run_scalar_ops()) memo_get(read_le(4));
        break;
      case HotOp::binget:
        if (!run_scalar_ops()) memo_get(read_le(1));
        break;
      case HotOp::memoize: memo_put(memo_count_); break;
      case HotOp::long1:
        if (!run_scalar_ops()) push_long(read_le(1));
        break;
      case HotOp::binint1:
        if (!run_scalar_ops()) push_scalar(1);
        break;
      case HotOp::binint2:
        if (!run_scalar_ops()) push_scalar(2);
        break;
      case HotOp::binint:
        if (!run_scalar_ops()) push_scalar(4);
        break;
      case HotOp::short_binunicode:
        if (run_scalar_ops()) break;
        push_scalar(read_le(1));
        take_next_memoize();
        break;
      case HotOp::mark: marks_.push_back(stack_.size()); break;
      case HotOp::empty_dict:  // in snapshots always followed by MEMOIZE, MARK
        if (options_.one_pass_dicts && read_shaped_dict()) break;
        push(add_container(Kind::dict));
        if (take_next_memoize() && next_op_is(MARK)) {
          ++pos_;
          marks_.push_back(stack_.size());
        }
        break;
      case HotOp::setitems: set_items(pop_mark()); break;
      case HotOp::stop:
        require(1);
        tree_.root_ = stack_.back();
        if (!streamed_.empty()) check_streamed_lists();
        return;  // like Python, trailing bytes after STOP are not looked at
      case HotOp::other: step(); break;
      default: __builtin_unreachable();  // kHotOps holds only the values above
    }
  }
}

// The scalar opcodes of a trace entry's pairs (the key GETs and the values: 14 of an entry's 17
// opcodes in gpt2_generate), run with the position, the stack top and the memo's size in
// registers. It executes an opcode only when it cannot fail and needs nothing the generic
// handlers would do besides: its bytes are all there, a GET finds a scalar or a container that
// is neither a taken entry nor a streamed list (marked shared, as note_shared marks it: the
// frames list every entry of gpt2_generate ends with), a LONG1 fits in 8 bytes,
// a MEMOIZE after a str gets the next memo index, the stack has room. Anything else stops it
// before that opcode, which run() then executes the generic way, with its errors and offsets.
bool Unpickler::run_scalar_ops() {
  const char* const data = data_.data();
  const size_t end = data_.size();
  size_t pos = op_pos_;
  Ref* top = stack_.top();
  Ref* const room_end = stack_.room_end();
  uint64_t memo_size = memo_.size();
  while (pos < end && top != room_end) {
    const size_t left = end - pos;
    const auto* p = reinterpret_cast<const uint8_t*>(data + pos);
    switch (kScalarOps[p[0]]) {
      case ScalarOp::long_binget: {
        if (left < 5) goto done;
        const Ref ref = fast_get(detail::load_le(data + pos + 1, 4), memo_size);
        if (ref == kUnsetMemo) goto done;
        *top++ = ref;
        pos += 5;
        break;
      }
      case ScalarOp::binget: {
        if (left < 2) goto done;
        const Ref ref = fast_get(p[1], memo_size);
        if (ref == kUnsetMemo) goto done;
        *top++ = ref;
        pos += 2;
        break;
      }
      case ScalarOp::int1:
      case ScalarOp::int2:
      case ScalarOp::int4: {
        const size_t length = 1 + (size_t{1} << (static_cast<unsigned>(kScalarOps[p[0]]) - 1));
        if (length > left) goto done;
        *top++ = Tree::kScalarBit | pos;
        pos += length;
        break;
      }
      case ScalarOp::long1:
        if (left < 2 || p[1] > 8 || size_t{p[1]} + 2 > left) goto done;
        *top++ = Tree::kScalarBit | pos;
        pos += 2 + size_t{p[1]};
        break;
      case ScalarOp::short_str:
        if (left < 2 || size_t{p[1]} + 2 > left) goto done;
        *top++ = Tree::kScalarBit | pos;
        pos += 2 + size_t{p[1]};
        // Python memoizes each fresh str: taken here as run() takes it after SHORT_BINUNICODE.
        if (pos < end && static_cast<uint8_t>(data[pos]) == MEMOIZE && memo_count_ == memo_size) {
          memo_.push_back(top[-1]);  // may move the slots: memo_[] is read through memo_ each time
          memo_size = memo_.size();
          ++memo_count_;
          ++pos;
        }
        break;
      case ScalarOp::other: goto done;
      default: __builtin_unreachable();  // kScalarOps holds only the values above
    }
  }
done:
  const bool ran = pos != op_pos_;
  stack_.set_top(top);
  if (ran) pos_ = pos;
  return ran;
}

void Unpickler::refuse_code() {
  fail(op_pos_, "refusing pickle opcode " + op_label(op_) + ": memreplay never imports or calls code");
}

uint64_t Unpickler::read_length4() {
  const auto n = static_cast<int32_t>(read_le(4));
  if (n < 0) fail_here("negative length");
  return static_cast<uint64_t>(n);
}

void Unpickler::step() {
  switch (op_) {
    // Structure.
    case MARK: marks_.push_back(stack_.size()); break;
    case POP:
      if (stack_.size() > floor())
        stack_.pop();
      else if (!marks_.empty())
        marks_.pop_back();  // Python pops the MARK itself then
      else
        fail_here("stack is empty");
      break;
    case POP_MARK: stack_.resize(pop_mark()); break;
    case DUP:
      require(1);
      note_shared(stack_.back());
      push(stack_.back());
      break;
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
    case NONE:
    case NEWTRUE:
    case NEWFALSE:
    case EMPTY_TUPLE: push_scalar(0); break;
    case BININT1: push_scalar(1); break;
    case BININT2: push_scalar(2); break;
    case BININT: push_scalar(4); break;
    case BINFLOAT: push_scalar(8); break;
    case LONG1: push_long(read_le(1)); break;
    case LONG4: push_long(read_length4()); break;
    case INT:
    case LONG: {
      std::string_view text = read_line();
      if (op_ == LONG && !text.empty() && text.back() == 'L') text.remove_suffix(1);
      if (!(op_ == INT && (text == "00" || text == "01"))) parse_decimal(text);  // INT 00/01: bools
      push(Tree::kScalarBit | op_pos_);
      break;
    }
    case FLOAT: {
      const std::string_view text = read_line();
      double d = 0;
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), d);
      if (ec != std::errc() || end != text.data() + text.size())
        fail_here("malformed float '" + std::string(text.substr(0, 40)) + "'");
      push(Tree::kScalarBit | op_pos_);
      break;
    }
    case SHORT_BINUNICODE:
    case SHORT_BINSTRING:
    case SHORT_BINBYTES: push_scalar(read_le(1)); break;
    case BINUNICODE:
    case BINBYTES: push_scalar(read_le(4)); break;
    case BINUNICODE8:
    case BINBYTES8:
    case BYTEARRAY8: push_scalar(read_le(8)); break;
    case BINSTRING: push_scalar(read_length4()); break;
    case READONLY_BUFFER:
      require(1);
      break;  // only marks a buffer read-only

    // Containers.
    case EMPTY_LIST: push(add_container(Kind::list)); break;
    case EMPTY_DICT: push(add_container(Kind::dict)); break;
    case EMPTY_SET: push(add_container(Kind::set)); break;
    case TUPLE1:
    case TUPLE2:
    case TUPLE3: {  // the top 1, 2 or 3 items (the opcodes are consecutive)
      static_assert(TUPLE2 == TUPLE1 + 1 && TUPLE3 == TUPLE1 + 2);
      const size_t n = op_ - TUPLE1 + 1;
      require(n);
      collapse(Kind::tuple, stack_.size() - n);
      break;
    }
    case TUPLE: collapse(Kind::tuple, pop_mark()); break;
    case LIST: collapse(Kind::list, pop_mark()); break;
    case DICT: collapse(Kind::dict, pop_mark()); break;
    case FROZENSET: collapse(Kind::set, pop_mark()); break;
    case APPEND:
      require(2);
      extend(Kind::list, stack_.size() - 1);
      break;
    case APPENDS: extend(Kind::list, pop_mark()); break;
    case SETITEM:
      require(3);
      extend(Kind::dict, stack_.size() - 2);
      break;
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
    case GLOBAL:
    case STACK_GLOBAL:
    case REDUCE:
    case BUILD:
    case INST:
    case OBJ:
    case NEWOBJ:
    case NEWOBJ_EX:
    case EXT1:
    case EXT2:
    case EXT4:
    case PERSID:
    case BINPERSID: refuse_code();

    // Plain data we still do not read.
    case STRING:
    case UNICODE:
      fail(op_pos_, "unsupported pickle opcode " + op_label(op_) +
                        ": protocol-0 text strings are not read (pickle with protocol 2 or newer)");
    case NEXT_BUFFER:
      fail(op_pos_, "unsupported pickle opcode " + op_label(op_) + ": out-of-band buffers are not read");
    default: fail(op_pos_, "unknown pickle opcode " + op_label(op_));
  }
}

Tree unpickle(std::string_view data, const std::string& file, const UnpickleOptions& options) {
  Tree tree;
  Unpickler(data, file, tree, options).run();
  return tree;
}

}  // namespace memreplay::pickle
