// The unpickler's one-pass read of a dict with the last dict's keys (unpickler_shaped_dict.cpp):
// whatever the bytes, the same tree, the same streamed items and the same errors as opcode by
// opcode (UnpickleOptions::one_pass_dicts off), streamed or not; taken for the usual trace entry,
// and left to the generic path for each shape it does not read: an extra key, keys in another
// order, a LONG1 past 8 bytes, a fresh frames list, the dict or a recycled entry fetched back, a
// FRAME inside the dict, a memo with a gap, a key that is a container, truncation anywhere.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "recorder/import/unpickler/pickle_reader.h"
#include "tests/support/pickle_tree_signature.h"
#include "tests/support/snapshot_pickle_writer.h"

namespace memreplay {
namespace {

using testing::PickleTreeSignature;
using testing::SnapshotWriter;

constexpr uint64_t kAddr = 0x7fe9'8000'0000;
constexpr uint64_t kTime = 1'796'016'913'378'201;

// How many dicts the one-pass read took, streamed to a sink or not.
uint64_t one_pass_count(const std::string& bytes, bool streaming) {
  uint64_t count = 0;
  pickle::UnpickleOptions options;
  options.dicts_read_in_one_pass = &count;
  PickleTreeSignature written;
  PickleTreeSignature::Sink sink(written);
  if (streaming) options.device_traces = &sink;
  try {
    pickle::unpickle(bytes, "t.pkl", options);
  } catch (const InputError&) {}
  return count;
}

// The bytes give the same signature both ways, streamed and not.
void expect_same_both_ways(const std::string& bytes) {
  for (const bool streaming : {false, true}) {
    SCOPED_TRACE(streaming ? "streamed" : "not streamed");
    EXPECT_EQ(PickleTreeSignature::of(bytes, true, streaming), PickleTreeSignature::of(bytes, false, streaming));
  }
}

void write_entries(SnapshotWriter& w, int n) {
  for (int i = 0; i < n; ++i) w.entry(i % 2 ? "free_completed" : "alloc", kAddr + 512 * i, 512, kTime + i);
}

// An entry of keys (action, frames) whose frames list is new: its memo index, for later GETs.
uint64_t write_entry_with_fresh_frames(SnapshotWriter& w) {
  w.begin_entry();
  w.key("action"), w.key("alloc"), w.key("frames"), w.op(']');
  const uint64_t frames = w.memoize();
  w.end_entry();
  return frames;
}

// Ends the entry begun in `w` with the usual keys after "addr" (size, stream, time_us and a
// memoized compile_context).
void end_usual_entry(SnapshotWriter& w) {
  w.key("size"), w.integer(8), w.key("stream"), w.integer(0), w.key("time_us"), w.integer(kTime);
  w.key("compile_context"), w.str("N/A"), w.memoize();
  w.end_entry();
}

// The pickle `w` wrote gives the same signature both ways, and the streamed read takes `dicts`
// dicts in one pass.
void expect_same_and_read_in_one_pass(SnapshotWriter& w, uint64_t dicts) {
  const std::string bytes = w.finish();
  expect_same_both_ways(bytes);
  EXPECT_EQ(one_pass_count(bytes, true), dicts);
}

TEST(PickleShapedDict, UsualEntriesAfterTheFirstAreReadInOnePassIntoTheSameTree) {
  SnapshotWriter w;
  write_entries(w, 6);
  const std::string bytes = w.finish();
  expect_same_both_ways(bytes);
  EXPECT_EQ(one_pass_count(bytes, false), 5u);  // the first makes the shape
  EXPECT_EQ(one_pass_count(bytes, true), 5u);
  // The signature does see the entries' values: two snapshots that differ in one size differ.
  SnapshotWriter other;
  for (int i = 0; i < 6; ++i)
    other.entry(i % 2 ? "free_completed" : "alloc", kAddr + 512 * i, i == 3 ? 256 : 512, kTime + i);
  EXPECT_NE(PickleTreeSignature::of(other.finish(), true, true), PickleTreeSignature::of(bytes, true, true));
}

TEST(PickleShapedDict, AnotherShapeGoesTheGenericWayAndTheNextUsualEntryIsReadInOnePass) {
  SnapshotWriter w;
  write_entries(w, 2);
  w.begin_entry();  // keys in another order
  w.key("addr"), w.integer(kAddr), w.key("action"), w.key("alloc"), w.key("size"), w.integer(8);
  w.key("stream"), w.integer(0), w.key("time_us"), w.integer(kTime), w.key("compile_context"), w.str("N/A"),
      w.memoize();
  w.end_entry();
  w.begin_entry();  // an extra key
  w.key("action"), w.key("alloc"), w.key("addr"), w.integer(kAddr), w.key("size"), w.integer(8);
  w.key("stream"), w.integer(0), w.key("time_us"), w.integer(kTime), w.key("compile_context"), w.str("N/A"),
      w.memoize();
  w.key("extra"), w.integer(1);
  w.end_entry();
  write_entries(w, 2);  // the first of these finds its shape among the recent ones, the next reads in one pass
  expect_same_and_read_in_one_pass(w, 2u);
}

TEST(PickleShapedDict, ValuesItDoesNotReadGoTheGenericWay) {
  struct Case {
    const char* what;
    void (*value)(SnapshotWriter&);
  };
  const Case cases[] = {
      {"a LONG1 of 9 bytes", [](SnapshotWriter& w) { w.long1(5, 9, 0); }},
      {"a negative LONG1 of 10 bytes", [](SnapshotWriter& w) { w.long1(~uint64_t{0}, 10, 0xff); }},
      {"a fresh frames list", [](SnapshotWriter& w) { w.op(']'), w.memoize(); }},
      {"a float",
       [](SnapshotWriter& w) {
         w.op('G');
         for (int i = 0; i < 8; ++i) w.op(0);
       }},
      {"a long str", [](SnapshotWriter& w) { w.op('X'), w.op(1), w.op(0), w.op(0), w.op(0), w.op('x'); }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    SnapshotWriter w;
    write_entries(w, 2);
    w.begin_entry();
    w.key("action"), w.key("alloc"), w.key("addr"), w.integer(kAddr), w.key("size"), c.value(w);
    w.key("stream"), w.integer(0), w.key("time_us"), w.integer(kTime), w.key("compile_context"), w.str("N/A"),
        w.memoize();
    w.end_entry();
    write_entries(w, 1);
    expect_same_and_read_in_one_pass(w, 2u);  // the second entry and the last
  }
}

TEST(PickleShapedDict, NoneBoolsAndMemoizedOrPlainStrsAreReadInOnePass) {
  SnapshotWriter w;
  for (int i = 0; i < 3; ++i) {
    w.begin_entry();
    w.key("action"), w.key("alloc"), w.key("addr"), w.integer(kAddr), w.key("none"), w.op('N');
    w.key("yes"), w.op(0x88), w.key("no"), w.op(0x89), w.key("plain"), w.str("p");
    w.key("memoized"), w.str("m"), w.memoize();
    w.end_entry();
  }
  expect_same_and_read_in_one_pass(w, 2u);
}

TEST(PickleShapedDict, AFetchedFramesListIsSharedAndTheEntriesAroundItRecycledTheSameWay) {
  SnapshotWriter w;
  const uint64_t frames = write_entry_with_fresh_frames(w);
  for (int i = 0; i < 4; ++i) {
    w.begin_entry();
    w.key("action"), w.key("alloc"), w.key("frames"), w.get(frames);
    w.end_entry();
  }
  expect_same_and_read_in_one_pass(w, 4u);  // the first made the shape (action, frames)
}

TEST(PickleShapedDict, TheDictItselfOrAnEntryFetchedBackGoesTheGenericWayWithItsErrors) {
  {  // a dict holding itself as a value
    SnapshotWriter w;
    write_entries(w, 2);
    w.begin_entry();
    const uint64_t self = w.memo_count() - 1;
    w.key("action"), w.key("alloc"), w.key("addr"), w.get(self);
    end_usual_entry(w);
    expect_same_and_read_in_one_pass(w, 1u);
  }
  for (const bool taken : {false, true}) {  // an entry of this batch, or of the last one (refused)
    SCOPED_TRACE(taken ? "taken" : "in this batch");
    SnapshotWriter w;
    const uint64_t first_entry = w.memo_count();
    write_entries(w, 3);
    if (taken) w.op('e'), w.op('(');  // APPENDS: the batch is handed over and its entries recycled
    w.begin_entry();
    w.key("action"), w.key("alloc"), w.key("addr"), w.get(first_entry);
    end_usual_entry(w);
    const std::string bytes = w.finish();
    expect_same_both_ways(bytes);
    const std::string streamed = PickleTreeSignature::of(bytes, true, true);  // the takes, then the end
    EXPECT_EQ(streamed.find("refers back to a trace entry") != std::string::npos, taken) << streamed;
  }
}

TEST(PickleShapedDict, AFrameInsideADictAndAMemoWithAGapGoTheGenericWay) {
  SnapshotWriter w;
  write_entries(w, 2);
  w.begin_entry();
  w.key("action"), w.key("alloc"), w.key("addr"), w.integer(kAddr);
  w.op(0x95);  // FRAME of 0 bytes left: only checked
  for (int i = 0; i < 8; ++i) w.op(0);
  end_usual_entry(w);
  expect_same_and_read_in_one_pass(w, 1u);

  SnapshotWriter gap;
  gap.str("far"), gap.put(100);  // BINPUT ahead of the memo's end: a gap before it
  gap.op('0');  // POP the str
  write_entries(gap, 4);
  const std::string gapped = gap.finish();
  expect_same_both_ways(gapped);
  EXPECT_EQ(one_pass_count(gapped, false), 0u);
}

TEST(PickleShapedDict, EveryPrefixAndEveryByteChangedGiveTheSameResultBothWays) {
  SnapshotWriter w;
  const uint64_t frames = write_entry_with_fresh_frames(w);
  for (int i = 0; i < 3; ++i) {
    w.begin_entry();
    w.key("action"), w.key(i % 2 ? "free_completed" : "alloc"), w.key("frames"), w.get(frames);
    w.key("addr"), w.integer(kAddr + i), w.key("size"), w.integer(512 << i), w.key("tag"), w.str("N/A"), w.memoize();
    w.end_entry();
  }
  w.op('e'), w.op('(');
  write_entries(w, 3);
  const std::string bytes = w.finish();
  for (size_t n = 0; n < bytes.size(); ++n) {
    SCOPED_TRACE("prefix " + std::to_string(n));
    expect_same_both_ways(bytes.substr(0, n));
  }
  for (size_t at = 0; at < bytes.size(); ++at)
    for (const uint8_t b :
         {0x00, 0x01, 0x05, 0x06, 0x28, 0x4b, 0x4e, 0x68, 0x6a, 0x75, 0x7d, 0x8a, 0x8c, 0x94, 0x95, 0xff}) {
      std::string changed = bytes;
      changed[at] = static_cast<char>(b);
      SCOPED_TRACE("byte " + std::to_string(at) + " = " + std::to_string(b));
      expect_same_both_ways(changed);
    }
  EXPECT_GT(one_pass_count(bytes, true), 3u);
}

}  // namespace
}  // namespace memreplay
