// A data-only unpickler: reads what Python's pickle protocols 0-5 write for plain data (None,
// bool, int, float, str, bytes, list, tuple, dict, set) into a compact read-only tree.
//
// Safety: it never imports or calls anything. Every opcode that would (GLOBAL, STACK_GLOBAL,
// REDUCE, BUILD, INST, OBJ, NEWOBJ, NEWOBJ_EX, EXT1/2/4, PERSID, BINPERSID) and every unknown
// opcode is refused with an InputError naming the byte offset and the opcode. Malformed input of
// any kind is an InputError too, never a crash, and memory use is bounded by a small multiple of
// the input size (every container, item and memo slot needs at least one input byte). Checked
// under AddressSanitizer/UBSan with every prefix and many byte-level corruptions of real pickles.
//
// Not read (refused with a clear message): protocol-0 text strings (STRING, UNICODE), which need
// escape decoding, and out-of-band buffers (NEXT_BUFFER). Integers must fit in 64 bits signed.
// Inputs may be of any size (offsets are 64-bit); a tree that is not streamed holds at most 2^32
// items, which inputs of 4 GiB or more can exceed (refused then). str bytes are passed through as
// stored (UTF-8 from any Python 3 pickler), not validated.
//
// Representation, chosen for speed (a 32 MB snapshot has 8.6 million opcodes; memory touched is
// most of the cost): a value is a 64-bit reference (Ref). A scalar (int, float, str, bytes, bool, None)
// is not copied anywhere: its reference is the input offset of the opcode that pushed it, checked
// while parsing and decoded when read. A container is a 16-byte node whose items live in one
// shared array of references; a dict keeps its keys apart from its values, so the millions of
// trace-entry dicts with the same keys share one key list. Memo GETs return the same reference,
// so aliased objects (the frames list many trace entries share, the memoized key strings) are
// one value, and id() tells aliases apart cheaply. Like Python objects, the tree may contain
// cycles (a list can contain itself): walk it along the paths you expect, never recursively
// without a depth limit.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iterator>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "recorder/import/input/growing_input.h"

namespace memreplay::pickle {

using memreplay::GrowingInput;

enum class Kind : uint8_t { none, boolean, integer, floating, str, bytes, list, tuple, dict, set };

std::string_view kind_name(Kind kind);

class Tree;

// A value of a Tree: with Tree::kScalarBit set, the input offset of a scalar's opcode; without
// it, the index of a container.
using Ref = uint64_t;

// A read-only handle on one value of a Tree: a pointer and a reference, cheap to copy.
// Accessors for the wrong kind are precondition violations (check kind() first); they return
// 0 or empty.
class Value {
 public:
  // What generic readers of snapshot trees (snapshot_tree_reader.h) name the tree and references by.
  using TreeType = Tree;
  using RefType = Ref;

  Value() = default;
  Value(const Tree* tree, Ref ref) : tree_(tree), ref_(ref) {}

  Kind kind() const;
  bool is(Kind k) const { return kind() == k; }
  // Identity of the underlying object: memo aliases of one object have equal ids.
  Ref id() const { return ref_; }
  // Input offset of the opcode that made the object (a scalar's opcode, a container's
  // EMPTY_*, LIST, TUPLE... opcode): where error messages point.
  uint64_t offset() const;

  bool as_bool() const;
  int64_t as_int() const;
  // The int, or nullopt for any other kind: one call does the kind check and the decoding.
  std::optional<int64_t> int_value() const;
  double as_float() const;
  std::string_view as_str() const;  // str and bytes

  bool is_sequence() const { return is(Kind::list) || is(Kind::tuple) || is(Kind::set); }
  // Number of items (list, tuple, set) or of key/value pairs (dict); 0 for scalars.
  uint32_t size() const;

  template <bool kPairs>
  class Range;
  using ItemRange = Range<false>;
  using PairRange = Range<true>;
  ItemRange items() const;  // list, tuple, set; empty for other kinds
  PairRange pairs() const;  // dict entries in pickled order; empty for other kinds
  // The value of the str key `key` in a dict; the last one when the pickle repeats a key, as
  // Python would keep it.
  std::optional<Value> get(std::string_view key) const;

  // Dicts with the same keys in the same order, built one after another, share one stored key
  // list: for those this is its id (equal for all of them), else 0. A reader of millions of
  // same-shaped dicts can then look at the keys once.
  uint32_t shape_id() const;
  // A dict with a shape_id(): its values in the order of the shape's keys (size() of them);
  // nullptr for any other value.
  const Ref* shaped_values() const;

  // Calls f(key, value) for each dict entry / f(item) for each item, like pairs() / items() but
  // as plain loops over the item runs: the fastest way through millions of trace entries.
  template <typename F>
  void for_each_pair(F&& f) const;
  template <typename F>
  void for_each_item(F&& f) const;

 private:
  const Tree* tree_ = nullptr;
  Ref ref_ = 0;
};

// The result of unpickling. It refers to the input bytes (scalars are decoded from them) and
// Values refer to the Tree: keep both alive, and do not move the Tree, while Values are in use.
class Tree {
 public:
  Value root() const { return Value(this, root_); }
  size_t container_count() const { return containers_.size(); }

  // A reference with this bit set is the input offset of a scalar's opcode; without it, the
  // index of a container.
  static constexpr Ref kScalarBit = Ref{1} << 63;
  static constexpr uint32_t kNoSegment = 0xffffffffu;

  // Walks a container's items run by run (see Container), one item or one dict pair at a time.
  class Cursor {
   public:
    Cursor() = default;
    bool done() const { return p_ == end_; }
    Ref item() const { return *p_; }
    Ref key() const { return keys_ ? *keys_ : p_[0]; }
    Ref value() const { return keys_ ? *p_ : p_[1]; }
    void next_item() {
      if (++p_ == end_) *this = tree_->run_cursor(next_);
    }
    void next_pair() {
      if (keys_)
        ++keys_, ++p_;
      else
        p_ += 2;
      if (p_ >= end_) *this = tree_->run_cursor(next_);
    }

   private:
    friend class Tree;
    const Tree* tree_ = nullptr;
    const Ref* p_ = nullptr;  // the next item (or value, when keys_ is set)
    const Ref* end_ = nullptr;  // end of this run
    const Ref* keys_ = nullptr;  // a shaped dict's next key
    uint32_t next_ = kNoSegment;  // the run after this one
  };
  Cursor cursor(Ref ref) const;

 private:
  friend class Value;
  friend class Unpickler;

  // A list, tuple, dict or set, in one of three layouts:
  //  one_run  items children_[begin, begin + count): the usual case, all items in one batch.
  //  runs     items in a chain of Segments starting at `extra`; `begin` is the last Segment,
  //           where the next batch goes. Long containers get these: APPENDS/SETITEMS carry at
  //           most 1000 items, and other containers are built in between.
  //  shaped   a dict filled in one batch: values at children_[begin, begin + count / 2), keys
  //           at shape_keys_[extra, ...). Consecutive dicts with the same keys (every entry of
  //           a snapshot trace) share one copy of the keys, which halves their footprint.
  enum class Layout : uint8_t { one_run, runs, shaped };
  struct Container {
    Kind kind;
    Layout layout;
    uint32_t count;  // items; keys and values both counted for dicts
    uint32_t begin;
    uint32_t extra;
  };
  struct Segment {
    uint32_t begin;
    uint32_t count;
    uint32_t next;
  };

  Cursor run_cursor(uint32_t segment) const {
    Cursor c;
    if (segment == kNoSegment) return c;
    const Segment& s = segments_[segment];
    c.tree_ = this;
    c.p_ = children_.data() + s.begin;
    c.end_ = c.p_ + s.count;
    c.next_ = s.next;
    return c;
  }

  Kind scalar_kind(uint64_t offset) const;
  int64_t scalar_int(uint64_t offset) const;
  double scalar_float(uint64_t offset) const;
  std::string_view scalar_text(uint64_t offset) const;

  std::string_view data_;
  std::vector<Container> containers_;
  std::vector<uint64_t> container_offsets_;  // by container index, see Value::offset
  std::vector<Ref> children_;
  std::vector<Segment> segments_;
  std::vector<Ref> shape_keys_;
  Ref root_ = 0;
};

// Streaming a snapshot's trace: the items of every list at root["device_traces"][k] are handed
// over as they are appended (APPEND/APPENDS) and are not kept in the Tree, so the tree of a
// snapshot of millions of entries stays as small as its segments and frames. Such a list is told
// by where it sits on the stack (CPython's layout of the dict _snapshot() returns: root dict, its
// MARK, ..., 'device_traces', the list of lists) and checked at STOP to be exactly
// root["device_traces"][k] (the last 'device_traces' key, as Python keeps it); a list used twice
// (memo GET, DUP) is refused rather than read differently from Python. A list of any other layout
// stays in the Tree, as without a sink. Entry dicts that nothing else can refer to (memoized at
// most once, never fetched back, never duplicated) are recycled: a later GET of one is refused.
class DeviceTraceSink {
 public:
  virtual ~DeviceTraceSink() = default;
  // `items` (references into `tree`, valid during the call) were just appended to
  // root["device_traces"][list_index], in order.
  virtual void take(uint32_t list_index, const Tree& tree, std::span<const Ref> items) = 0;
};

struct UnpickleOptions {
  DeviceTraceSink* device_traces = nullptr;
  // Input still being produced (a decompressor on another thread): `data` is then the part of
  // growing->data() there so far, and the unpickler waits for more as it needs it.
  const GrowingInput* growing = nullptr;
  // Called about every 64 MiB of input with the offset reached: a mapped input may release the
  // pages before it (scalars are decoded from the input later, so they may read back).
  std::function<void(uint64_t)> progress;
  // Dicts of the last dict's keys read in one pass (unpickler_shaped_dict.cpp). The same tree
  // either way: off only for the tests and fuzzers that compare the two.
  bool one_pass_dicts = true;
  uint64_t* dicts_read_in_one_pass = nullptr;  // counted there where set (tests)
};

// Unpickles `data`. `file` only names the input in error messages. Throws InputError.
// The Tree refers to `data`, which must outlive it (hence no overload for a temporary string).
Tree unpickle(std::string_view data, const std::string& file, const UnpickleOptions& options = {});
Tree unpickle(std::string&& data, const std::string& file, const UnpickleOptions& options = {}) = delete;

// --- inline accessors (hot in the importers) ---

namespace detail {
// Opcodes that push scalars (names as in CPython's pickle.py).
inline constexpr uint8_t kNONE = 'N', kNEWTRUE = 0x88, kNEWFALSE = 0x89, kINT = 'I', kBININT = 'J', kBININT1 = 'K',
                         kBININT2 = 'M', kLONG = 'L', kLONG1 = 0x8a, kLONG4 = 0x8b, kFLOAT = 'F', kBINFLOAT = 'G',
                         kSHORT_BINUNICODE = 0x8c, kBINUNICODE = 'X', kBINUNICODE8 = 0x8d, kSHORT_BINSTRING = 'U',
                         kBINSTRING = 'T', kSHORT_BINBYTES = 'C', kBINBYTES = 'B', kBINBYTES8 = 0x8e,
                         kBYTEARRAY8 = 0x96, kEMPTY_TUPLE = ')';

// The kind of the scalar each opcode pushes (INT is refined: protocol 0 writes bools as INT).
constexpr std::array<Kind, 256> make_scalar_kinds() {
  std::array<Kind, 256> k{};  // Kind::none for NONE and for opcodes that push no scalar
  k[kNEWTRUE] = k[kNEWFALSE] = Kind::boolean;
  k[kINT] = k[kBININT] = k[kBININT1] = k[kBININT2] = k[kLONG] = k[kLONG1] = k[kLONG4] = Kind::integer;
  k[kFLOAT] = k[kBINFLOAT] = Kind::floating;
  k[kSHORT_BINUNICODE] = k[kBINUNICODE] = k[kBINUNICODE8] = k[kSHORT_BINSTRING] = k[kBINSTRING] = Kind::str;
  k[kSHORT_BINBYTES] = k[kBINBYTES] = k[kBINBYTES8] = k[kBYTEARRAY8] = Kind::bytes;
  k[kEMPTY_TUPLE] = Kind::tuple;
  return k;
}
inline constexpr std::array<Kind, 256> kScalarKinds = make_scalar_kinds();

inline uint64_t load_le(const char* p, unsigned n) {
  uint64_t v = 0;
  std::memcpy(&v, p, n);  // little-endian hosts only (checked in pickle_reader.cpp)
  return v;
}
}  // namespace detail

inline Kind Tree::scalar_kind(uint64_t offset) const {
  const char* p = data_.data() + offset;
  const auto op = static_cast<uint8_t>(*p);
  // "I00\n" / "I01\n" are False / True. Reading stops at the '\n' parsing found, so stays in bounds.
  if (op == detail::kINT && p[1] == '0' && (p[2] == '0' || p[2] == '1') && p[3] == '\n') return Kind::boolean;
  return detail::kScalarKinds[op];
}

inline uint64_t Value::offset() const {
  if (ref_ & Tree::kScalarBit) return ref_ & ~Tree::kScalarBit;
  return tree_->container_offsets_[ref_];
}

[[gnu::always_inline]] inline Kind Value::kind() const {
  if (ref_ & Tree::kScalarBit) return tree_->scalar_kind(ref_ & ~Tree::kScalarBit);
  return tree_->containers_[ref_].kind;
}
[[gnu::always_inline]] inline std::optional<int64_t> Value::int_value() const {
  if (!(ref_ & Tree::kScalarBit)) return std::nullopt;
  const uint64_t offset = ref_ & ~Tree::kScalarBit;
  const char* p = tree_->data_.data() + offset;
  switch (static_cast<uint8_t>(*p)) {  // the opcodes real snapshots use, decoded in line
    case detail::kBININT1: return static_cast<uint8_t>(p[1]);
    case detail::kBININT2: return static_cast<int64_t>(detail::load_le(p + 1, 2));
    case detail::kBININT: return static_cast<int32_t>(detail::load_le(p + 1, 4));
    case detail::kLONG1: {
      const unsigned n = static_cast<uint8_t>(p[1]);
      // Load 8 bytes at once where the input allows (bytes past the payload are shifted out).
      if (n == 0 || n > 8 || offset + 10 > tree_->data_.size()) break;
      const unsigned unused = 64 - 8 * n;  // sign-extend from the top byte
      return static_cast<int64_t>(detail::load_le(p + 2, 8) << unused) >> unused;
    }
    default: break;
  }
  if (tree_->scalar_kind(offset) != Kind::integer) return std::nullopt;
  return tree_->scalar_int(offset);
}
inline int64_t Value::as_int() const { return int_value().value_or(0); }
inline bool Value::as_bool() const { return is(Kind::boolean) && tree_->scalar_int(ref_ & ~Tree::kScalarBit) != 0; }
inline std::string_view Value::as_str() const {
  if (!(ref_ & Tree::kScalarBit)) return {};
  const uint64_t offset = ref_ & ~Tree::kScalarBit;
  const char* p = tree_->data_.data() + offset;
  if (static_cast<uint8_t>(*p) == detail::kSHORT_BINUNICODE) return std::string_view(p + 2, static_cast<uint8_t>(p[1]));
  return tree_->scalar_text(offset);
}
inline double Value::as_float() const {
  return (ref_ & Tree::kScalarBit) ? tree_->scalar_float(ref_ & ~Tree::kScalarBit) : 0;
}
inline uint32_t Value::shape_id() const {
  if (ref_ & Tree::kScalarBit) return 0;
  const Tree::Container& c = tree_->containers_[ref_];
  return c.layout == Tree::Layout::shaped ? c.extra + 1 : 0;
}
inline const Ref* Value::shaped_values() const {
  if (shape_id() == 0) return nullptr;
  return tree_->children_.data() + tree_->containers_[ref_].begin;
}
inline uint32_t Value::size() const {
  if (ref_ & Tree::kScalarBit) return 0;
  const Tree::Container& c = tree_->containers_[ref_];
  return c.kind == Kind::dict ? c.count / 2 : c.count;
}

inline Tree::Cursor Tree::cursor(Ref ref) const {
  Cursor c;
  if (ref & kScalarBit) return c;
  const Container& k = containers_[ref];
  if (k.count == 0) return c;
  if (k.layout == Layout::runs) return run_cursor(k.extra);
  c.tree_ = this;
  c.p_ = children_.data() + k.begin;
  if (k.layout == Layout::shaped) {
    c.keys_ = shape_keys_.data() + k.extra;
    c.end_ = c.p_ + k.count / 2;
  } else {
    c.end_ = c.p_ + k.count;
  }
  return c;
}

// The items (kPairs false: list, tuple, set) or the key/value pairs (kPairs true: dict) of a
// container, for range-for.
template <bool kPairs>
class Value::Range {
 public:
  class iterator {
   public:
    iterator(const Tree* t, Tree::Cursor c) : tree_(t), cursor_(c) {}
    auto operator*() const {
      if constexpr (kPairs)
        return std::pair<Value, Value>{Value(tree_, cursor_.key()), Value(tree_, cursor_.value())};
      else
        return Value(tree_, cursor_.item());
    }
    iterator& operator++() {
      if constexpr (kPairs)
        cursor_.next_pair();
      else
        cursor_.next_item();
      return *this;
    }
    // Compared with the end sentinel only, so the loop test is one register compare.
    bool operator==(std::default_sentinel_t) const { return cursor_.done(); }

   private:
    const Tree* tree_;
    Tree::Cursor cursor_;
  };
  iterator begin() const { return iterator(tree_, first_); }
  std::default_sentinel_t end() const { return {}; }

 private:
  friend class Value;
  Range(const Tree* t, Tree::Cursor first) : tree_(t), first_(first) {}
  const Tree* tree_;
  Tree::Cursor first_;
};

inline Value::ItemRange Value::items() const {
  return ItemRange(tree_, is_sequence() ? tree_->cursor(ref_) : Tree::Cursor());
}
inline Value::PairRange Value::pairs() const {
  return PairRange(tree_, is(Kind::dict) ? tree_->cursor(ref_) : Tree::Cursor());
}

template <typename F>
void Value::for_each_pair(F&& f) const {
  if (!is(Kind::dict)) return;
  const Tree::Container& c = tree_->containers_[ref_];
  const Ref* children = tree_->children_.data();
  if (c.layout == Tree::Layout::shaped) {  // the common case, as a plain loop
    const Ref* keys = tree_->shape_keys_.data() + c.extra;
    const Ref* values = children + c.begin;
    for (uint32_t i = 0, n = c.count / 2; i < n; ++i) f(Value(tree_, keys[i]), Value(tree_, values[i]));
    return;
  }
  for (Tree::Cursor k = tree_->cursor(ref_); !k.done(); k.next_pair())
    f(Value(tree_, k.key()), Value(tree_, k.value()));
}

template <typename F>
void Value::for_each_item(F&& f) const {
  if (!is_sequence()) return;
  for (Tree::Cursor k = tree_->cursor(ref_); !k.done(); k.next_item()) f(Value(tree_, k.item()));
}

}  // namespace memreplay::pickle
