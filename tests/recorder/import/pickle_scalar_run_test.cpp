// The unpickler's scalar run (Unpickler::run_scalar_ops: the key GETs and scalar values of trace
// entries, executed in a tight loop) and every way out of it to the generic handlers: entries of
// the usual shape, an extra key, keys in another order, a LONG1 past 8 bytes, a memoized frames
// list, an entry and a streamed list fetched back, a MEMOIZE whose index is not the memo's end, a
// run longer than the stack's room, and the errors inside a run (truncated, never stored, a
// recycled entry), with their offsets.
#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "proto/event.h"
#include "proto/input_error.h"
#include "proto/trace_sink.h"
#include "recorder/import/pytorch/pytorch_snapshot_importer.h"
#include "recorder/import/unpickler/pickle_reader.h"
#include "tests/support/snapshot_pickle_writer.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

using pickle::Kind;
using pickle::Value;
using testing::SnapshotWriter;

// (kind, address, size, time_ns) of each event the importer wrote from the trace entries.
using Step = std::tuple<EventKind, uint64_t, uint64_t, uint64_t>;

std::vector<Step> imported_steps(const std::string& bytes) {
  CollectingSink sink;
  import_pytorch_snapshot_pickle(bytes, "t.pkl", sink);
  std::vector<Step> steps;
  for (const Event& e : sink.events)
    if (!e.has_flag(kPreexisting) && !e.has_flag(kInferred)) steps.emplace_back(e.kind, e.address, e.size, e.time_ns);
  return steps;
}

std::string import_error(const std::string& bytes) {
  return testing::error_of<InputError>([&] {
    CollectingSink sink;
    import_pytorch_snapshot_pickle(bytes, "t.pkl", sink);
  });
}

constexpr uint64_t kAddr = 0x7fe9'8000'0000;  // a LONG1 of 6 bytes, as real addresses are
constexpr uint64_t kTime = 1'796'016'913'378'201;  // 7 bytes

// The four entries of one block's life, with sizes that take BININT, BININT2 and BININT1.
void write_block_life(SnapshotWriter& w) {
  w.entry("segment_alloc", kAddr, 20'971'520, kTime);
  w.entry("alloc", kAddr, 3072, kTime + 1);
  w.entry("free_requested", kAddr, 3072, kTime + 2);
  w.entry("free_completed", kAddr, 100, kTime + 3);
}

const std::vector<Step> kBlockLife = {
    {EventKind::segment_alloc, kAddr, 20'971'520, kTime * 1000},
    {EventKind::alloc, kAddr, 3072, (kTime + 1) * 1000},
    {EventKind::free_requested, kAddr, 3072, (kTime + 2) * 1000},
    {EventKind::free_completed, kAddr, 100, (kTime + 3) * 1000},
};

TEST(PickleScalarRun, EntriesOfTheUsualShapeImportTheirValues) {
  SnapshotWriter w;
  write_block_life(w);
  EXPECT_EQ(imported_steps(w.finish()), kBlockLife);
}

TEST(PickleScalarRun, AnEntryWithAnExtraKeyOrKeysInAnotherOrderImportsTheSameValues) {
  SnapshotWriter w;
  w.entry("segment_alloc", kAddr, 20'971'520, kTime);
  w.begin_entry();  // an extra key before the usual ones, with a str and a negative int
  w.key("extra"), w.str("x"), w.memoize(), w.key("more"), w.long1(~uint64_t{0}, 1, 0xff);
  w.key("action"), w.key("alloc"), w.key("addr"), w.integer(kAddr), w.key("size"), w.integer(3072);
  w.key("stream"), w.integer(0), w.key("time_us"), w.integer(kTime + 1);
  w.end_entry();
  w.begin_entry();  // the usual keys backwards
  w.key("time_us"), w.integer(kTime + 2), w.key("stream"), w.integer(0), w.key("size"), w.integer(3072);
  w.key("addr"), w.integer(kAddr), w.key("action"), w.key("free_requested");
  w.end_entry();
  w.entry("free_completed", kAddr, 100, kTime + 3);
  EXPECT_EQ(imported_steps(w.finish()), kBlockLife);
}

TEST(PickleScalarRun, ALong1PastEightBytesLeavesTheRunAndImportsItsValue) {
  SnapshotWriter w;
  w.entry("segment_alloc", kAddr, 20'971'520, kTime);
  w.begin_entry();
  w.key("action"), w.key("alloc"), w.key("addr"), w.long1(kAddr, 9);  // legal: the 9th byte extends the sign
  w.key("size"), w.integer(3072), w.key("stream"), w.integer(0), w.key("time_us"), w.long1(kTime + 1, 12);
  w.end_entry();
  w.entry("free_requested", kAddr, 3072, kTime + 2);
  w.entry("free_completed", kAddr, 100, kTime + 3);
  EXPECT_EQ(imported_steps(w.finish()), kBlockLife);

  SnapshotWriter bad;
  bad.entry("segment_alloc", kAddr, 20'971'520, kTime);
  bad.begin_entry();
  bad.key("action"), bad.key("alloc"), bad.key("addr");
  const size_t at = bad.offset();
  bad.long1(kAddr, 10, 0x01);  // does not fit in 64 bits
  bad.end_entry();
  EXPECT_EQ(import_error(bad.finish()),
            "t.pkl: byte " + std::to_string(at) + ": LONG1 (0x8a): integer of 10 bytes does not fit in 64 bits");
}

// A frames list is a container: its GET leaves the run (note_shared must see it, so that the
// entry holding it is never recycled under the second entry's feet) and the run goes on after.
TEST(PickleScalarRun, AMemoizedFramesListFetchedByGetIsOneStack) {
  SnapshotWriter w;
  w.entry("segment_alloc", kAddr, 20'971'520, kTime);
  uint64_t frames = 0;
  for (int i = 0; i < 2; ++i) {
    w.begin_entry();
    w.key("action"), w.key("alloc"), w.key("addr"), w.integer(kAddr + 512 * i), w.key("frames");
    if (i == 0) {
      w.op(']'), frames = w.memoize(), w.op('(');
      w.op('}'), w.memoize(), w.op('('), w.key("filename"), w.str("a.py"), w.memoize();
      w.key("line"), w.integer(10), w.key("name"), w.str("f"), w.memoize(), w.op('u');
      w.op('e');
    } else {
      w.get(frames);
    }
    w.key("size"), w.integer(512), w.key("stream"), w.integer(0), w.key("time_us"), w.integer(kTime + 1 + i);
    w.end_entry();
  }
  CollectingSink sink;
  import_pytorch_snapshot_pickle(w.finish(), "t.pkl", sink);
  std::vector<std::tuple<EventKind, uint64_t, uint32_t>> allocs;
  for (const Event& e : sink.events)
    if (e.kind == EventKind::alloc && !e.has_flag(kPreexisting)) allocs.emplace_back(e.kind, e.address, e.stack);
  ASSERT_EQ(allocs.size(), 2u);
  EXPECT_EQ(allocs[0], std::make_tuple(EventKind::alloc, kAddr, uint32_t{1}));
  EXPECT_EQ(allocs[1], std::make_tuple(EventKind::alloc, kAddr + 512, uint32_t{1}));
  ASSERT_EQ(sink.stacks.size(), 1u);
  ASSERT_EQ(sink.stacks[0].size(), 1u);
  EXPECT_EQ(sink.stacks[0][0].filename, "a.py");
  EXPECT_EQ(sink.stacks[0][0].line, 10u);
  EXPECT_EQ(sink.stacks[0][0].name, "f");
}

// After a PUT ahead, a MEMOIZE's index (the memo's count) is not the memo's end: the run
// leaves that MEMOIZE to the generic handler, and a GET of the index finds the str.
TEST(PickleScalarRun, AStrMemoizedAfterAPutFarAheadIsFetchedBack) {
  SnapshotWriter w;
  w.entry("segment_alloc", kAddr, 20'971'520, kTime);
  w.begin_entry();
  w.key("extra"), w.integer(7), w.put(100);  // BINPUT 100: the memo's end is now 101
  w.key("action"), w.str("alloc");
  const uint64_t alloc = w.memoize();  // stored at the count of stored slots, not at 101
  ASSERT_LT(alloc, 100u);
  w.key("addr"), w.integer(kAddr), w.key("size"), w.integer(3072), w.key("stream"), w.integer(0);
  w.key("time_us"), w.integer(kTime + 1);
  w.end_entry();
  w.begin_entry();
  w.key("action"), w.get(alloc), w.key("addr"), w.integer(kAddr + 4096), w.key("size"), w.integer(3072);
  w.key("stream"), w.integer(0), w.key("time_us"), w.integer(kTime + 2);
  w.end_entry();
  const std::vector<Step> steps = imported_steps(w.finish());
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[1], Step(EventKind::alloc, kAddr, 3072, (kTime + 1) * 1000));
  EXPECT_EQ(steps[2], Step(EventKind::alloc, kAddr + 4096, 3072, (kTime + 2) * 1000));
}

// 600 scalars in one run: the stack's first room (256) runs out inside it, the generic push
// grows the stack and the run resumes.
TEST(PickleScalarRun, ARunLongerThanTheStacksRoomImportsEveryValue) {
  SnapshotWriter w;
  w.begin_entry();
  for (int i = 0; i < 300; ++i) w.key("k" + std::to_string(i)), w.integer(static_cast<uint64_t>(i) * 70'000);
  w.key("action"), w.key("segment_alloc"), w.key("addr"), w.integer(kAddr), w.key("size"), w.integer(20'971'520);
  w.key("stream"), w.integer(0), w.key("time_us"), w.integer(kTime);
  w.end_entry();
  const std::string bytes = w.finish();
  EXPECT_EQ(imported_steps(bytes), std::vector<Step>{kBlockLife[0]});

  pickle::Tree tree = pickle::unpickle(bytes, "t.pkl");  // no sink: the entry stays in the tree
  const Value trace = *tree.root().get("device_traces")->items().begin();
  const Value entry = *trace.items().begin();
  ASSERT_TRUE(entry.is(Kind::dict));
  EXPECT_EQ(entry.size(), 305u);
  EXPECT_EQ(entry.get("k299")->as_int(), 299 * 70'000);
  EXPECT_EQ(entry.get("k1")->as_int(), 70'000);
}

// Without a sink, a GET of a container stays in the run: both items are the one list.
TEST(PickleScalarRun, WithoutASinkAGetOfAContainerIsTheSameObject) {
  // [L, L, 5] with L = [1]: EMPTY_LIST MEMOIZE MARK (EMPTY_LIST MEMOIZE BININT1 1 APPEND) BINGET 1 BININT1 5 APPENDS
  // STOP
  const std::string bytes(
      "\x80\x04]\x94(]\x94K\x01"
      "ah\x01K\x05"
      "e.",
      17);
  const pickle::Tree tree = pickle::unpickle(bytes, "t.pkl");
  std::vector<Value> items;
  for (Value v : tree.root().items()) items.push_back(v);
  ASSERT_EQ(items.size(), 3u);
  EXPECT_TRUE(items[0].is(Kind::list));
  EXPECT_EQ(items[0].id(), items[1].id());
  EXPECT_EQ(items[2].as_int(), 5);
}

// Errors inside a run are those of the generic handlers, at the opcode's offset.
TEST(PickleScalarRun, ErrorsInsideARunNameTheOpcodeAndItsOffset) {
  SnapshotWriter head;
  write_block_life(head);
  head.begin_entry();
  head.key("action"), head.key("alloc"), head.key("addr");
  const size_t at = head.offset();
  SnapshotWriter w = head;
  w.get(300);  // LONG_BINGET 300, cut after 2 of its 4 argument bytes
  const std::string truncated = w.finish().substr(0, at + 3);
  EXPECT_EQ(import_error(truncated),
            "t.pkl: byte " + std::to_string(at) + ": LONG_BINGET (0x6a): pickle truncated: needs 4 more bytes, 2 left");

  SnapshotWriter never = head;
  never.get(70'000);
  EXPECT_EQ(import_error(never.finish()),
            "t.pkl: byte " + std::to_string(at) + ": LONG_BINGET (0x6a): memo index 70000 was never stored");

  SnapshotWriter long1 = head;
  long1.long1(kAddr, 6);
  EXPECT_EQ(import_error(long1.finish().substr(0, at + 5)),
            "t.pkl: byte " + std::to_string(at) + ": LONG1 (0x8a): pickle truncated: needs 6 more bytes, 3 left");
}

// Ends `w` with an entry {"action": "alloc", key: GET index}: the import refuses that GET, at its
// byte, with `why`.
void expect_get_refused(SnapshotWriter& w, const std::string& key, uint64_t index, const std::string& why) {
  w.begin_entry();
  w.key("action"), w.key("alloc"), w.key(key);
  const size_t at = w.offset();
  w.get(index);
  w.end_entry();
  EXPECT_EQ(import_error(w.finish()), "t.pkl: byte " + std::to_string(at) + ": BINGET (0x68): " + why);
}

// An entry dict handed to the sink is recycled: a later GET of it is refused, from the run too.
TEST(PickleScalarRun, AGetOfARecycledEntryIsRefused) {
  SnapshotWriter w;
  w.begin_entry();  // memo index 6 (after the six of the root's head)
  w.key("action"), w.key("segment_alloc"), w.key("addr"), w.integer(kAddr), w.key("size"), w.integer(20'971'520);
  w.key("stream"), w.integer(0), w.key("time_us"), w.integer(kTime);
  w.end_entry();
  w.op('e'), w.op('(');  // APPENDS hands it over; a new batch
  expect_get_refused(w, "addr", 6, "memo index 6 refers back to a trace entry (not a pickle torch writes)");
}

// Containers fetched by GET inside a run are noted as shared, as the generic GET notes them: an
// entry listed twice in a batch is not recycled, so a later batch may fetch it again.
TEST(PickleScalarRun, AnEntryFetchedByGetInsideARunIsNeverRecycled) {
  SnapshotWriter w;
  w.op('}');
  const uint64_t entry = w.memoize();
  w.op('(');
  w.key("action"), w.key("alloc"), w.key("addr"), w.integer(kAddr), w.key("size"), w.integer(512);
  w.key("stream"), w.integer(0), w.key("time_us"), w.integer(kTime);
  w.end_entry();
  w.get(entry);  // the batch is [entry, entry]
  w.op('e'), w.op('(');  // APPENDS hands it over; a new batch
  w.get(entry);
  struct Recording : pickle::DeviceTraceSink {
    std::vector<std::vector<pickle::Ref>> batches;
    std::vector<int64_t> addrs;
    void take(uint32_t, const pickle::Tree& tree, std::span<const pickle::Ref> items) override {
      batches.emplace_back(items.begin(), items.end());
      for (const pickle::Ref ref : items) addrs.push_back(Value(&tree, ref).get("addr").value().as_int());
    }
  } sink;
  pickle::UnpickleOptions options;
  options.device_traces = &sink;
  const std::string bytes = w.finish();
  pickle::unpickle(bytes, "t.pkl", options);
  ASSERT_EQ(sink.batches.size(), 2u);
  ASSERT_EQ(sink.batches[0].size(), 2u);
  ASSERT_EQ(sink.batches[1].size(), 1u);
  EXPECT_EQ(sink.batches[0][0], sink.batches[0][1]);
  EXPECT_EQ(sink.batches[1][0], sink.batches[0][0]);
  EXPECT_EQ(sink.addrs, std::vector<int64_t>(3, static_cast<int64_t>(kAddr)));
}

// A GET of a streamed device trace list leaves the run and is refused by the generic GET.
TEST(PickleScalarRun, AGetOfAStreamedListInsideARunIsRefused) {
  SnapshotWriter w;  // memo index 5 is device_traces[0]
  w.entry("segment_alloc", kAddr, 20'971'520, kTime);
  w.op('e'), w.op('(');  // APPENDS streams the list; a new batch
  expect_get_refused(w, "frames", 5, "a device trace list is referred to twice (not a pickle torch writes)");
}

}  // namespace
}  // namespace memreplay
