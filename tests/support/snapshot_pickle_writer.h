// A writer of small snapshot pickles laid out the way CPython's pickler lays out torch's, for the
// tests of the snapshot reader's fast paths (pickle_scalar_run_test.cpp, snapshot_usual_entry_test.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace memreplay::testing {

// Writes a snapshot pickle the way CPython's pickler lays out torch's (protocol 4, every str and
// container memoized, key strings fetched back by GET after their first use).
class SnapshotWriter {
 public:
  SnapshotWriter() {
    op(0x80), op(4);
    op('}'), memoize(), op('(');
    str("segments"), memoize(), op(']'), memoize();
    str("device_traces"), memoize(), op(']'), memoize(), op(']'), memoize(), op('(');
  }
  // The bytes so far, and the finished pickle (the list into device_traces, the root's items).
  size_t offset() const { return bytes_.size(); }
  uint64_t memo_count() const { return memo_; }  // the index the next MEMOIZE stores at
  std::string finish() {
    op('e'), op('a'), op('u'), op('.');
    return bytes_;
  }

  void op(uint8_t c) { bytes_ += static_cast<char>(c); }
  uint64_t memoize() {
    op(0x94);
    return memo_++;
  }
  // BINPUT: stores at `index`; the memo then holds one more item, as len(memo) counts.
  void put(uint8_t index) {
    op('q'), op(index);
    ++memo_;
  }
  void str(const std::string& s) {  // SHORT_BINUNICODE
    op(0x8c), op(static_cast<uint8_t>(s.size()));
    bytes_ += s;
  }
  void get(uint64_t index) {
    if (index < 256) {
      op('h'), op(static_cast<uint8_t>(index));  // BINGET
    } else {
      op('j');  // LONG_BINGET
      for (int i = 0; i < 4; ++i) op(static_cast<uint8_t>(index >> (8 * i)));
    }
  }
  // The smallest opcode CPython picks for v >= 0: BININT1, BININT2, BININT or LONG1.
  void integer(uint64_t v) {
    if (v < 256) {
      op('K'), op(static_cast<uint8_t>(v));
    } else if (v < 65536) {
      op('M'), op(static_cast<uint8_t>(v)), op(static_cast<uint8_t>(v >> 8));
    } else if (v < 0x80000000u) {
      op('J');
      for (int i = 0; i < 4; ++i) op(static_cast<uint8_t>(v >> (8 * i)));
    } else {
      unsigned n = 1;
      while (n < 8 && (v >> (8 * n - 1)) != 0) ++n;  // room for a zero sign bit
      long1(v, n);
    }
  }
  // LONG1 with exactly `n` bytes (n > 8 pads with `pad`, which must extend the sign to fit).
  void long1(uint64_t v, unsigned n, uint8_t pad = 0) {
    op(0x8a), op(static_cast<uint8_t>(n));
    for (unsigned i = 0; i < n; ++i) op(i < 8 ? static_cast<uint8_t>(v >> (8 * i)) : pad);
  }
  // A key string: written and memoized the first time, fetched by GET after.
  void key(const std::string& k) {
    for (const auto& [name, index] : keys_)
      if (name == k) return get(index);
    str(k);
    keys_.emplace_back(k, memoize());
  }
  void begin_entry() { op('}'), memoize(), op('('); }
  void end_entry() { op('u'); }
  // An entry with torch's usual keys and a fresh 'N/A' compile_context, as gpt2_generate has.
  void entry(const std::string& action, uint64_t addr, uint64_t size, uint64_t time_us) {
    begin_entry();
    key("action"), key(action);
    key("addr"), integer(addr);
    key("size"), integer(size);
    key("stream"), integer(0);
    key("time_us"), integer(time_us);
    key("compile_context"), str("N/A"), memoize();
    end_entry();
  }

 private:
  std::string bytes_;
  uint64_t memo_ = 0;
  std::vector<std::pair<std::string, uint64_t>> keys_;
};

}  // namespace memreplay::testing
