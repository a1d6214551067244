// The data-only unpickler: every plain-data opcode of protocols 0-5 decodes to the right values,
// every code-running opcode is refused by name, and malformed input (truncated anywhere, bytes
// flipped anywhere) is an InputError, never a crash.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "proto/input_error.h"
#include "proto/trace_sink.h"
#include "recorder/import/pytorch/pytorch_snapshot_importer.h"
#include "recorder/import/unpickler/pickle_reader.h"
#include "tests/support/test_support.h"
#include "tests/support/tiny_snapshot.h"

namespace memreplay {
namespace {

using pickle::Kind;
using pickle::Value;

// The sample pickles of tests/data/pickles (README.md there says what each holds), read once.
const std::string& sample(const std::string& name) {
  static std::map<std::string, std::string> samples;
  auto [it, inserted] = samples.try_emplace(name);
  if (inserted) it->second = testing::read_bytes(testing::source_dir() / "tests/data/pickles" / (name + ".pickle"));
  return it->second;
}

// A string literal as bytes, embedded NULs included.
template <size_t N>
std::string bytes_of(const char (&literal)[N]) {
  return std::string(literal, N - 1);
}

// The message of the InputError that unpickling `bytes` throws; "" when it parses.
std::string unpickle_error(std::string_view bytes) {
  return testing::error_of<InputError>([&] { pickle::unpickle(bytes, "t.pkl"); });
}

Value at(Value dict, const char* key) {
  const auto v = dict.get(key);
  EXPECT_TRUE(v.has_value()) << key;
  return v.value_or(Value());
}

std::vector<int64_t> ints(Value sequence) {
  std::vector<int64_t> out;
  for (Value v : sequence.items()) out.push_back(v.as_int());
  return out;
}

// The values every protocol holds (the `base` dict).
void expect_base_values(Value root) {
  ASSERT_TRUE(root.is(Kind::dict));
  EXPECT_TRUE(at(root, "none").is(Kind::none));
  EXPECT_TRUE(at(root, "t").is(Kind::boolean));
  EXPECT_TRUE(at(root, "t").as_bool());
  EXPECT_TRUE(at(root, "f").is(Kind::boolean));
  EXPECT_FALSE(at(root, "f").as_bool());
  EXPECT_EQ(at(root, "small").as_int(), 7);
  EXPECT_EQ(at(root, "byte").as_int(), 200);
  EXPECT_EQ(at(root, "short").as_int(), 40000);
  EXPECT_EQ(at(root, "int").as_int(), -123456);
  EXPECT_EQ(at(root, "big").as_int(), (int64_t{1} << 40) + 5);
  EXPECT_EQ(at(root, "neg_big").as_int(), -(int64_t{1} << 62));
  EXPECT_EQ(at(root, "max").as_int(), INT64_MAX);
  EXPECT_EQ(at(root, "min").as_int(), INT64_MIN);
  EXPECT_EQ(at(root, "neg1").as_int(), -1);
  EXPECT_TRUE(at(root, "big").is(Kind::integer));
  EXPECT_EQ(at(root, "float").as_float(), 2.5);
  EXPECT_EQ(at(root, "negf").as_float(), -1e-300);
  EXPECT_EQ(at(root, "str").as_str(), "hello");
  EXPECT_EQ(at(root, "unicode").as_str(), "h\xc3\xa9llo \xe2\x9c\x93");
  EXPECT_EQ(at(root, "long_str").as_str(), std::string(300, 'x'));
  EXPECT_TRUE(at(root, "tuple0").is(Kind::tuple));
  EXPECT_EQ(at(root, "tuple0").size(), 0u);
  EXPECT_EQ(ints(at(root, "tuple1")), (std::vector<int64_t>{1}));
  EXPECT_EQ(ints(at(root, "tuple3")), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(ints(at(root, "tuple4")), (std::vector<int64_t>{1, 2, 3, 4}));
  const Value pair = at(root, "tuple2");
  ASSERT_EQ(pair.size(), 2u);
  EXPECT_EQ((*pair.items().begin()).as_int(), 1);
  std::vector<int64_t> range(30);
  for (int i = 0; i < 30; ++i) range[i] = i;
  EXPECT_TRUE(at(root, "list").is(Kind::list));
  EXPECT_EQ(ints(at(root, "list")), range);
  std::vector<std::pair<int64_t, std::string>> int_keys;
  for (auto [k, v] : at(root, "int_keys").pairs()) int_keys.emplace_back(k.as_int(), v.as_str());
  EXPECT_EQ(int_keys, (std::vector<std::pair<int64_t, std::string>>{{1, "one"}, {-2, "minus two"}}));
  // Memo aliasing: both keys refer to the one list object.
  EXPECT_EQ(at(root, "shared1").id(), at(root, "shared2").id());
  EXPECT_EQ(ints(at(root, "shared2")), (std::vector<int64_t>{1, 2}));
  const Value nested = *at(at(root, "nested"), "a").items().begin();
  EXPECT_EQ(at(nested, "b").as_str(), "c");
}

TEST(PickleReader, Protocol1) { expect_base_values(pickle::unpickle(sample("protocol1"), "p1").root()); }

TEST(PickleReader, Protocol2) { expect_base_values(pickle::unpickle(sample("protocol2"), "p2").root()); }

TEST(PickleReader, Protocol3Bytes) {
  const pickle::Tree tree = pickle::unpickle(sample("protocol3"), "p3");
  expect_base_values(tree.root());
  EXPECT_TRUE(at(tree.root(), "bytes").is(Kind::bytes));
  EXPECT_EQ(at(tree.root(), "bytes").as_str(), bytes_of("\x00\x01\xff"));
  EXPECT_EQ(at(tree.root(), "bigbytes").as_str(), std::string(300, 'y'));
}

TEST(PickleReader, Protocol4SetsAndFrames) {
  const pickle::Tree tree = pickle::unpickle(sample("protocol4"), "p4");
  expect_base_values(tree.root());
  EXPECT_TRUE(at(tree.root(), "set").is(Kind::set));
  std::vector<int64_t> set = ints(at(tree.root(), "set"));
  std::sort(set.begin(), set.end());
  EXPECT_EQ(set, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(ints(at(tree.root(), "frozenset")), (std::vector<int64_t>{4}));
}

TEST(PickleReader, Protocol5ByteArray) {
  const pickle::Tree tree = pickle::unpickle(sample("protocol5"), "p5");
  expect_base_values(tree.root());
  EXPECT_EQ(at(tree.root(), "bytearray").as_str(), "ab");
}

TEST(PickleReader, Protocol0TextOpcodes) {
  const pickle::Tree tree = pickle::unpickle(sample("protocol0"), "p0");
  std::vector<Value> items;
  for (Value v : tree.root().items()) items.push_back(v);
  ASSERT_EQ(items.size(), 12u);
  EXPECT_EQ(items[0].as_int(), 1);
  EXPECT_EQ(items[1].as_int(), -2);
  EXPECT_EQ(items[2].as_float(), 2.5);
  EXPECT_TRUE(items[3].is(Kind::none));
  EXPECT_TRUE(items[4].is(Kind::boolean) && items[4].as_bool());
  EXPECT_TRUE(items[5].is(Kind::boolean) && !items[5].as_bool());
  EXPECT_EQ(ints(items[6]), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(items[7].size(), 1u);
  EXPECT_EQ(items[8].as_int(), 1'000'000'000'000'000);
  EXPECT_EQ(items[9].as_int(), -1'000'000'000'000'000);
  EXPECT_EQ(items[10].id(), items[11].id());  // PUT / GET
}

// The opcodes Python rarely writes for plain data, hand-assembled into one list.
TEST(PickleReader, RareOpcodes) {
  const std::string bytes = bytes_of(
      "\x80\x05]("  // PROTO 5, EMPTY_LIST, MARK
      "U\x02"
      "ab"  // SHORT_BINSTRING
      "T\x02\x00\x00\x00"
      "cd"  // BINSTRING
      "\x8d\x02\x00\x00\x00\x00\x00\x00\x00"
      "ef"  // BINUNICODE8
      "\x8e\x01\x00\x00\x00\x00\x00\x00\x00"
      "g"  // BINBYTES8
      "\x98"  // READONLY_BUFFER
      "\x8b\x02\x00\x00\x00\xff\x7f"  // LONG4 32767
      "K\x09"
      "2"  // BININT1 9, DUP
      "N0"  // NONE, POP
      "(NN1"  // MARK, NONE, NONE, POP_MARK
      "r\x32\x00\x00\x00"
      "j\x32\x00\x00\x00"  // LONG_BINPUT 50, LONG_BINGET 50
      "p7\n"
      "g7\n"  // PUT 7, GET 7
      "\x8f(K\x01K\x02\x90"  // EMPTY_SET, MARK, 1, 2, ADDITEMS
      "(K\x03\x91"  // MARK, 3, FROZENSET
      "(K\x01K\x02"
      "d"  // MARK, 1, 2, DICT
      "}K\x05K\x06s"  // EMPTY_DICT, 5, 6, SETITEM
      "(K\x07l"  // MARK, 7, LIST
      "(K\x08t"  // MARK, 8, TUPLE
      "e.");  // APPENDS, STOP
  const pickle::Tree tree = pickle::unpickle(bytes, "rare");
  std::vector<Value> items;
  for (Value v : tree.root().items()) items.push_back(v);
  ASSERT_EQ(items.size(), 15u);
  EXPECT_EQ(items[0].as_str(), "ab");
  EXPECT_TRUE(items[0].is(Kind::str));
  EXPECT_EQ(items[1].as_str(), "cd");
  EXPECT_EQ(items[2].as_str(), "ef");
  EXPECT_TRUE(items[3].is(Kind::bytes));
  EXPECT_EQ(items[3].as_str(), "g");
  EXPECT_EQ(items[4].as_int(), 32767);
  for (int i = 5; i < 9; ++i) EXPECT_EQ(items[i].as_int(), 9) << i;
  EXPECT_TRUE(items[9].is(Kind::set));
  EXPECT_EQ(ints(items[9]), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(ints(items[10]), (std::vector<int64_t>{3}));
  EXPECT_EQ((*items[11].pairs().begin()).second.as_int(), 2);
  EXPECT_EQ((*items[12].pairs().begin()).first.as_int(), 5);
  EXPECT_EQ(ints(items[13]), (std::vector<int64_t>{7}));
  EXPECT_TRUE(items[14].is(Kind::tuple));
}

// Python writes long lists in APPENDS batches of 1000, with nested containers built in between,
// so a list's items are several runs of the item array. Check order and count across them.
TEST(PickleReader, ListBuiltInInterleavedBatches) {
  std::string bytes = "\x80\x04]";
  int64_t next = 0;
  std::vector<int64_t> expected;
  for (int batch = 0; batch < 3; ++batch) {
    bytes += '(';
    for (int i = 0; i < 1000; ++i, ++next) {
      bytes += 'M';
      bytes += static_cast<char>(next & 0xff);
      bytes += static_cast<char>(next >> 8);
      expected.push_back(next);
    }
    bytes +=
        "](K\x01K\x02"
        "e";  // a nested list, built between this batch's items
    bytes += 'e';
  }
  bytes += '.';
  const pickle::Tree tree = pickle::unpickle(bytes, "batches");
  std::vector<int64_t> got;
  int nested = 0;
  for (Value v : tree.root().items()) {
    if (v.is(Kind::list)) {
      ++nested;
      EXPECT_EQ(ints(v), (std::vector<int64_t>{1, 2}));
    } else {
      got.push_back(v.as_int());
    }
  }
  EXPECT_EQ(nested, 3);
  EXPECT_EQ(got, expected);
  EXPECT_EQ(tree.root().size(), 3003u);
  int64_t sum = 0;
  tree.root().for_each_item([&](Value v) { sum += v.is(Kind::integer) ? v.as_int() : 0; });
  EXPECT_EQ(sum, 2999 * 3000 / 2);
}

TEST(PickleReader, RefusesEveryOpcodeThatRunsCode) {
  struct Case {
    const char* name;
    std::string bytes;
    int offset;
  };
  const std::vector<Case> cases = {
      {"GLOBAL (0x63)",
       bytes_of("\x80\x02"
                "cos\nsystem\n."),
       2},
      {"STACK_GLOBAL (0x93)", bytes_of("\x80\x04\x8c\x02os\x8c\x06system\x93."), 14},
      {"REDUCE (0x52)", bytes_of("\x80\x02N)R."), 4},
      {"BUILD (0x62)", bytes_of("\x80\x02}}b."), 4},
      {"INST (0x69)", bytes_of("\x80\x02(ios\nsystem\n."), 3},
      {"OBJ (0x6f)", bytes_of("\x80\x02(No."), 4},
      {"NEWOBJ (0x81)", bytes_of("\x80\x02N)\x81."), 4},
      {"NEWOBJ_EX (0x92)", bytes_of("\x80\x04N)}\x92."), 5},
      {"PERSID (0x50)", bytes_of("\x80\x02Pfoo\n."), 2},
      {"BINPERSID (0x51)", bytes_of("\x80\x02NQ."), 3},
      {"EXT1 (0x82)", bytes_of("\x80\x02\x82\x01."), 2},
      {"EXT2 (0x83)", bytes_of("\x80\x02\x83\x01\x00."), 2},
      {"EXT4 (0x84)", bytes_of("\x80\x02\x84\x01\x00\x00\x00."), 2},
  };
  for (const Case& c : cases) {
    const std::string expected = "t.pkl: byte " + std::to_string(c.offset) + ": refusing pickle opcode " + c.name +
                                 ": memreplay never imports or calls code";
    EXPECT_EQ(unpickle_error(c.bytes), expected);
  }
}

TEST(PickleReader, RefusesARealMaliciousPickle) {
  EXPECT_NE(unpickle_error(sample("evil_protocol2")).find("refusing pickle opcode GLOBAL"), std::string::npos);
  EXPECT_NE(unpickle_error(sample("evil_protocol4")).find("refusing pickle opcode STACK_GLOBAL"), std::string::npos);
}

TEST(PickleReader, MalformedInputNamesTheProblem) {
  struct Case {
    std::string bytes;
    std::string message;  // expected substring
  };
  const std::vector<Case> cases = {
      {"", "byte 0: pickle ends without STOP"},
      {bytes_of("\x80\x02N"), "byte 3: pickle ends without STOP"},
      {bytes_of("\x80\x02\xff."), "byte 2: unknown pickle opcode 0xff"},
      {bytes_of("\x80\x06N."), "unsupported pickle protocol 6"},
      {bytes_of("\x80\x02."), "STOP (0x2e): needs 1 stack item(s)"},
      {bytes_of("\x80\x02]a."), "APPEND (0x61): needs 2 stack item(s)"},
      {bytes_of("\x80\x02]Ne."), "APPENDS (0x65): no MARK to pop"},
      {bytes_of("\x80\x02(NNe."), "byte 5: APPENDS (0x65): no target object"},
      {bytes_of("\x80\x02}(Nu."), "SETITEMS (0x75): odd number of stack items"},
      {bytes_of("\x80\x02}(Ne."), "APPENDS (0x65): target is a dict, expected a list"},
      {bytes_of("\x80\x02](NNu."), "SETITEMS (0x75): target is a list, expected a dict"},
      {bytes_of("\x80\x02K\x01(NNu."), "SETITEMS (0x75): target is a int, expected a dict"},
      {bytes_of("\x80\x02(NNu."), "byte 5: SETITEMS (0x75): no target object"},
      {bytes_of("\x80\x02h\x05."), "BINGET (0x68): memo index 5 was never stored"},
      {bytes_of("\x80\x02Nr\xff\xff\xff\xff."), "LONG_BINPUT (0x72): memo index 4294967295 is out of range"},
      {bytes_of("\x80\x04\x8d\xff\xff\xff\xff\xff\xff\xff\x7f."), "BINUNICODE8 (0x8d): pickle truncated"},
      {bytes_of("\x80\x02X\x05\x00\x00\x00"
                "abc"),
       "byte 2: BINUNICODE (0x58): pickle truncated: needs 5 more bytes, 3 left"},
      {bytes_of("\x80\x02\x8b\xff\xff\xff\x7f."), "LONG4 (0x8b): pickle truncated"},
      {bytes_of("\x80\x02\x8b\xff\xff\xff\xff."), "LONG4 (0x8b): negative length"},
      {bytes_of("\x80\x02\x8a\x09\x01\x00\x00\x00\x00\x00\x00\x00\x01."), "integer of 9 bytes does not fit in 64 bits"},
      {bytes_of("\x80\x02I99999999999999999999\n."), "INT (0x49): integer does not fit in 64 bits"},
      {bytes_of("\x80\x02I12x\n."), "INT (0x49): malformed decimal argument"},
      {bytes_of("\x80\x02I12"), "argument has no end of line"},
      {bytes_of("\x80\x04\x95\xff\x00\x00\x00\x00\x00\x00\x00N."), "FRAME (0x95): pickle truncated"},
      {bytes_of("\x80\x02S'a'\n."), "unsupported pickle opcode STRING (0x53)"},
      {bytes_of("\x80\x05\x97."), "unsupported pickle opcode NEXT_BUFFER (0x97)"},
  };
  for (const Case& c : cases) {
    const std::string error = unpickle_error(c.bytes);
    EXPECT_NE(error.find(c.message), std::string::npos) << "got: " << error << "\nwant: " << c.message;
    EXPECT_EQ(error.rfind("t.pkl: byte ", 0), 0u) << error;
  }
}

// SETITEMS into a dict that has items already, or with no items, keeps every pair.
TEST(PickleReader, ADictFilledInTwoBatchesAndAnEmptyOneHoldsEveryPair) {
  const std::string bytes = bytes_of("\x80\x02}(K\x01K\x02u(u(K\x03K\x04u.");
  const pickle::Tree tree = pickle::unpickle(bytes, "t.pkl");
  std::vector<std::pair<int64_t, int64_t>> pairs;
  for (auto [k, v] : tree.root().pairs()) pairs.emplace_back(k.as_int(), v.as_int());
  EXPECT_EQ(pairs, (std::vector<std::pair<int64_t, int64_t>>{{1, 2}, {3, 4}}));
}

// A long encoding of a small int is legal when the extra bytes only extend the sign.
TEST(PickleReader, SignExtendedLongEncodings) {
  const std::string minus_one = bytes_of("\x80\x02\x8a\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff.");
  EXPECT_EQ(pickle::unpickle(minus_one, "t").root().as_int(), -1);
  const std::string five = bytes_of("\x80\x02\x8a\x09\x05\x00\x00\x00\x00\x00\x00\x00\x00.");
  EXPECT_EQ(pickle::unpickle(five, "t").root().as_int(), 5);
  const std::string zero = bytes_of("\x80\x02\x8a\x00.");
  EXPECT_EQ(pickle::unpickle(zero, "t").root().as_int(), 0);
}

// Memo aliasing can make a list contain itself; the tree holds the cycle without trouble.
TEST(PickleReader, SelfContainingList) {
  const std::string bytes = bytes_of(
      "\x80\x04]\x94h\x00"
      "a.");
  const pickle::Tree tree = pickle::unpickle(bytes, "t");
  const Value root = tree.root();
  ASSERT_EQ(root.size(), 1u);
  EXPECT_EQ((*root.items().begin()).id(), root.id());
}

// Every proper prefix of a pickle lacks its STOP: each must be an InputError.
TEST(PickleReader, TruncationAtEveryOffsetIsAnInputError) {
  const std::string& full = test::kTinySnapshot;
  for (size_t n = 0; n < full.size(); ++n) {
    const std::string_view prefix(full.data(), n);
    EXPECT_FALSE(unpickle_error(prefix).empty()) << "prefix of " << n << " bytes parsed";
    CollectingSink sink;
    EXPECT_THROW(import_pytorch_snapshot_pickle(prefix, "t.pkl", sink), InputError) << n;
  }
  EXPECT_EQ(unpickle_error(full), "");
}

// Corrupt bytes anywhere: the unpickler and the importer either succeed or throw InputError.
// Anything else (a crash, another exception type) fails the test; run it under
// -DMEMREPLAY_SANITIZE=ON to catch memory errors too.
TEST(PickleReader, CorruptBytesNeverCrash) {
  std::string bytes = test::kTinySnapshot;
  size_t parsed = 0, refused = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    const char original = bytes[i];
    for (const int mask : {0xff, 0x01, 0x80, 0x10}) {
      bytes[i] = static_cast<char>(original ^ mask);
      try {
        const pickle::Tree tree = pickle::unpickle(bytes, "t.pkl");
        CollectingSink sink;
        import_pytorch_snapshot_pickle(bytes, "t.pkl", sink);
        ++parsed;
      } catch (const InputError&) {
        ++refused;
      }
    }
    bytes[i] = original;
  }
  EXPECT_GT(refused, 0u);
  EXPECT_GT(parsed, 0u);  // e.g. a flipped digit in a size still imports
}

// The same for the protocol 0-5 samples, through the unpickler alone.
TEST(PickleReader, CorruptSamplesNeverCrash) {
  for (const char* name : {"protocol0", "protocol1", "protocol2", "protocol3", "protocol4", "protocol5"}) {
    std::string bytes = sample(name);
    for (size_t i = 0; i < bytes.size(); ++i) {
      const char original = bytes[i];
      for (const int mask : {0xff, 0x01, 0x40}) {
        bytes[i] = static_cast<char>(original ^ mask);
        try {
          const pickle::Tree tree = pickle::unpickle(bytes, "t.pkl");
          // Walk what came out, as a consumer would.
          tree.root().for_each_pair([](Value k, Value v) {
            (void)k.as_str();
            (void)v.as_int();
            (void)v.as_float();
            v.for_each_item([](Value item) { (void)item.kind(); });
          });
        } catch (const InputError&) {}
      }
      bytes[i] = original;
    }
  }
}

}  // namespace
}  // namespace memreplay
