// Pickles past what 32 bits address ("whatever the snapshot's size"): the
// memo of millions of entries stays a bounded part of resident memory and still answers a GET of
// any index, and inputs past 2 GiB and 4 GiB read right. The big inputs are anonymous memory of
// which only the head and tail are written: a bytes object of gigabytes of zeros in between
// costs address space, not memory, since the unpickler only checks that its bytes are there.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "proto/input_error.h"
#include "proto/trace_writer.h"
#include "recorder/import/pytorch/pytorch_snapshot_importer.h"
#include "recorder/import/unpickler/pickle_memo.h"
#include "recorder/import/unpickler/pickle_reader.h"
#include "tests/support/test_support.h"
#include "tests/support/tiny_snapshot.h"

namespace memreplay {
namespace {

using pickle::Kind;
using pickle::PickleMemo;
using pickle::Ref;
using pickle::Value;

// Resident bytes of the mapping that holds `address` (its Rss line in /proc/self/smaps).
uint64_t resident_bytes_of_mapping(const void* address) {
  std::ifstream smaps("/proc/self/smaps");
  const auto a = reinterpret_cast<uintptr_t>(address);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    unsigned long begin = 0, end = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &begin, &end) == 2) {  // a mapping's first line
      inside = begin <= a && a < end;
      continue;
    }
    unsigned long kib = 0;
    if (inside && std::sscanf(line.c_str(), "Rss: %lu kB", &kib) == 1) return uint64_t{kib} * 1024;
  }
  ADD_FAILURE() << "no mapping holds " << address;
  return 0;
}

// A scalar reference as the unpickler makes them, for slot i.
Ref slot_value(uint64_t i) { return pickle::Tree::kScalarBit | (i * 7 + 3); }

// 24 M slots, a 900 MB snapshot's memo (PyTorch memoizes two objects per entry): in memory up to
// kInMemorySlots (32 MiB), past that in a scratch file of which only the last pages stay resident
// (at most 24 MiB of the 192 MB), yet every index, the first ones included, reads back what was
// stored.
TEST(PickleMemo, ResidentMemoryStaysBoundedAndEveryIndexAnswersAfterMillionsOfSlots) {
  constexpr uint64_t kSlots = 24'000'000;
  PickleMemo memo("t.pkl");
  uint64_t most_resident_spilled = 0;
  for (uint64_t i = 0; i < kSlots; ++i) {
    memo.push_back(slot_value(i));
    if (i + 1 == PickleMemo::kInMemorySlots) EXPECT_FALSE(memo.spilled());  // 32 MiB, in memory
    // Once spilled the slots are a mapping of their own; before, malloc's heap may hold them.
    if (i % 1'000'000 == 999'999 && memo.spilled())
      most_resident_spilled = std::max(most_resident_spilled, resident_bytes_of_mapping(memo.data()));
  }
  ASSERT_TRUE(memo.spilled());
  ASSERT_EQ(memo.size(), kSlots);
  const uint64_t all_slots = kSlots * sizeof(Ref);  // 192 MB
  EXPECT_GT(most_resident_spilled, 0u);
  EXPECT_LE(most_resident_spilled, 3 * PickleMemo::kReleaseSlots * sizeof(Ref)) << "of " << all_slots;
  for (const uint64_t i : {uint64_t{0}, uint64_t{1}, uint64_t{4095}, PickleMemo::kInMemorySlots - 1,
                           PickleMemo::kInMemorySlots, uint64_t{12'345'678}, kSlots - 1})
    EXPECT_EQ(memo[i], slot_value(i)) << i;
  // An old slot overwritten (a streamed entry recycled) reads back changed.
  memo.set(17, pickle::Tree::kScalarBit - 1);
  EXPECT_EQ(memo[17], pickle::Tree::kScalarBit - 1);
  EXPECT_LE(resident_bytes_of_mapping(memo.data()), 3 * PickleMemo::kReleaseSlots * sizeof(Ref) + 64 * 1024);
}

// A hostile PUT far ahead: the slots in between read as never stored, and cost no writes.
TEST(PickleMemo, SlotsSkippedByAPutFarAheadAreUnset) {
  PickleMemo memo("t.pkl");
  memo.push_back(5);
  memo.resize(PickleMemo::kInMemorySlots * 3);
  memo.set(PickleMemo::kInMemorySlots * 3 - 1, 9);
  EXPECT_TRUE(memo.spilled());
  EXPECT_EQ(memo[0], 5u);
  EXPECT_EQ(memo[1], PickleMemo::kUnset);
  EXPECT_EQ(memo[PickleMemo::kInMemorySlots * 2], PickleMemo::kUnset);
  EXPECT_EQ(memo[PickleMemo::kInMemorySlots * 3 - 1], 9u);
}

// --- a pickle writer for the shapes below (protocol 4 opcodes, no frames) ---

struct PickleText {
  std::string bytes = "\x80\x04";
  uint64_t memo = 0;
  void op(char c) { bytes += c; }
  uint64_t memoize() {
    bytes += '\x94';
    return memo++;
  }
  void str(const std::string& s) {  // SHORT_BINUNICODE
    bytes += '\x8c';
    bytes += static_cast<char>(s.size());
    bytes += s;
  }
  void get(uint64_t index) {  // LONG_BINGET
    bytes += 'j';
    for (int i = 0; i < 4; ++i) bytes += static_cast<char>((index >> (8 * i)) & 0xff);
  }
  void binint(uint32_t v) {
    bytes += 'J';
    for (int i = 0; i < 4; ++i) bytes += static_cast<char>((v >> (8 * i)) & 0xff);
  }
};

class CountingSink final : public pickle::DeviceTraceSink {
 public:
  void take(uint32_t, const pickle::Tree& tree, std::span<const Ref> items) override {
    for (const Ref ref : items) {
      const Value entry(&tree, ref);
      const auto addr = entry.get("addr");
      if (!addr || addr->as_int() != static_cast<int64_t>(entries)) ++wrong;
      ++entries;
    }
  }
  uint64_t entries = 0;
  uint64_t wrong = 0;
};

// 3 M streamed entries, each memoizing its dict and a fresh str as PyTorch's pickles do (6 M memo
// slots, past PickleMemo::kInMemorySlots), then GETs of the first entry's str, of a key string
// memoized at the start and of the last entry's str: all answered with the right values.
TEST(PickleMemoInUnpickler, AGetOfAnEarlyIndexIsAnsweredAfterMillionsOfEntries) {
  constexpr uint32_t kEntries = 3'000'000;
  PickleText p;
  p.op('}'), p.memoize(), p.op('(');
  p.str("segments"), p.memoize(), p.op(']'), p.memoize();
  p.str("device_traces"), p.memoize(), p.op(']'), p.memoize(), p.op(']'), p.memoize();
  uint64_t addr_key = 0, tag_key = 0, first_tag = 0, last_tag = 0;
  for (uint32_t i = 0; i < kEntries; ++i) {
    if (i % 1000 == 0) p.op('(');
    p.op('}'), p.memoize(), p.op('(');
    if (i == 0)
      p.str("addr"), addr_key = p.memoize();
    else
      p.get(addr_key);
    p.binint(i);
    if (i == 0)
      p.str("tag"), tag_key = p.memoize();
    else
      p.get(tag_key);
    p.str("tag" + std::to_string(i));
    const uint64_t tag = p.memoize();
    if (i == 0) first_tag = tag;
    last_tag = tag;
    p.op('u');
    if (i % 1000 == 999 || i + 1 == kEntries) p.op('e');
  }
  p.op('a');  // the trace list into device_traces
  p.str("first"), p.get(first_tag), p.str("key"), p.get(addr_key), p.str("last"), p.get(last_tag);
  p.op('u'), p.op('.');
  ASSERT_GT(p.memo, PickleMemo::kInMemorySlots);

  CountingSink sink;
  pickle::UnpickleOptions options;
  options.device_traces = &sink;
  const pickle::Tree tree = pickle::unpickle(p.bytes, "t.pkl", options);
  EXPECT_EQ(sink.entries, kEntries);
  EXPECT_EQ(sink.wrong, 0u);
  const Value root = tree.root();
  ASSERT_TRUE(root.is(Kind::dict));
  EXPECT_EQ(root.get("first")->as_str(), "tag0");
  EXPECT_EQ(root.get("key")->as_str(), "addr");
  EXPECT_EQ(root.get("last")->as_str(), "tag" + std::to_string(kEntries - 1));
}

// Anonymous memory for an input of `bytes`, address space only until written.
class BigInput {
 public:
  explicit BigInput(uint64_t bytes) : bytes_(bytes) {
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p != MAP_FAILED) data_ = static_cast<char*>(p);
  }
  ~BigInput() {
    if (data_ != nullptr) ::munmap(data_, bytes_);
  }
  char* data() const { return data_; }
  std::string_view view() const { return {data_, bytes_}; }

 private:
  char* data_ = nullptr;
  uint64_t bytes_;
};

// BINBYTES8 of `n` bytes: the opcode and its length (the bytes follow, zeros here).
std::string binbytes8_header(uint64_t n) {
  std::string h = "\x8e";
  for (int i = 0; i < 8; ++i) h += static_cast<char>((n >> (8 * i)) & 0xff);
  return h;
}

// Past 2^31 and 2^32: a str memoized before 4 GiB of zeros and fetched after them, a str after
// them, read back with their offsets.
TEST(PickleLargeInput, OffsetsPastFourGiBReadRight) {
  constexpr uint64_t kFiller = (uint64_t{1} << 32) + 12345;
  std::string head = "\x80\x04}\x94(";
  head +=
      "\x8c\x05"
      "early\x94";  // memo 1
  head +=
      "\x8c\x05"
      "value";  // 'early': 'value'
  head +=
      "\x8c\x06"
      "filler" +
      binbytes8_header(kFiller);
  std::string tail =
      "\x8c\x04"
      "late\x8c\x04"
      "tail";
  tail +=
      "\x8c\x05"
      "again"
      "h\x01";  // 'again': memo 1 ('early')
  tail += "u.";
  BigInput input(head.size() + kFiller + tail.size());
  ASSERT_NE(input.data(), nullptr);
  std::memcpy(input.data(), head.data(), head.size());
  std::memcpy(input.data() + head.size() + kFiller, tail.data(), tail.size());

  const pickle::Tree tree = pickle::unpickle(input.view(), "big.pkl");
  const Value root = tree.root();
  ASSERT_TRUE(root.is(Kind::dict));
  EXPECT_EQ(root.size(), 4u);
  EXPECT_EQ(root.get("filler")->as_str().size(), kFiller);
  const Value late = *root.get("late");
  EXPECT_EQ(late.as_str(), "tail");
  EXPECT_EQ(late.offset(), head.size() + kFiller + 6);
  EXPECT_GT(late.offset(), uint64_t{1} << 32);
  EXPECT_EQ(root.get("again")->as_str(), "early");
  EXPECT_EQ(root.get("again")->id(), (*root.pairs().begin()).first.id());
}

// The tiny snapshot with 4 GiB of zeros in a key before its 'segments': every trace entry then
// sits past 2^32, every key string it fetches was memoized before 2^31, and the .mrt written is
// byte for byte the one of the snapshot without them.
class PickleLargeSnapshot : public testing::TempDirTest {};

TEST_F(PickleLargeSnapshot, PastFourGiBImportsByteIdenticalToTheSameEntriesSmall) {
  auto import_to = [&](std::string_view bytes, const std::string& out) {
    TraceWriter writer(out);
    import_pytorch_snapshot_pickle(bytes, "snapshot.pickle", writer);
    writer.finish();
    return testing::read_bytes(out);
  };
  const std::string small = import_to(test::kTinySnapshot, path("small.mrt"));

  constexpr uint64_t kFiller = (uint64_t{1} << 32) + 777;
  constexpr size_t kRootDictMark = 2 + 9 + 3;  // PROTO, FRAME, then EMPTY_DICT MEMOIZE MARK
  ASSERT_EQ(test::kTinySnapshot.substr(kRootDictMark - 3, 3), "}\x94(");
  const std::string filler_key =
      "\x8c\x07"
      "padding" +
      binbytes8_header(kFiller);
  const std::string rest = test::kTinySnapshot.substr(kRootDictMark);
  BigInput input(kRootDictMark + filler_key.size() + kFiller + rest.size());
  ASSERT_NE(input.data(), nullptr);
  std::memcpy(input.data(), test::kTinySnapshot.data(), kRootDictMark);
  std::memcpy(input.data() + kRootDictMark, filler_key.data(), filler_key.size());
  std::memcpy(input.data() + kRootDictMark + filler_key.size() + kFiller, rest.data(), rest.size());

  const std::string big = import_to(input.view(), path("big.mrt"));
  ASSERT_FALSE(small.empty());
  EXPECT_TRUE(big == small) << "the .mrt of the 4 GiB snapshot differs from the small one's";
}

}  // namespace
}  // namespace memreplay
