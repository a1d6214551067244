// The snapshot reader's path for trace entries of the usual shape (SnapshotReader read_usual: an
// alloc, free or segment entry with the keys of the entry before it, read by position) and each
// way back to the generic path: an unknown or non-str action, an oom or user_defined action, a
// time_us, stream, addr or size that is not an int in range, frames that are not a list. Each
// bad entry comes third, after two of the same keys, so the usual path is the one that meets it;
// the error must be the generic path's, word for word.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "proto/event.h"
#include "proto/input_error.h"
#include "proto/trace_sink.h"
#include "recorder/import/pytorch/pytorch_snapshot_importer.h"
#include "tests/support/snapshot_pickle_writer.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

using testing::SnapshotWriter;

constexpr uint64_t kAddr = 0x7fe9'8000'0000;
constexpr uint64_t kTime = 1'796'016'913'378'201;

// An entry with the keys action, addr, size, stream, time_us, frames; `value(key)` writes the
// value of each key after the action.
void entry(SnapshotWriter& w, const std::string& action, const std::function<void(const std::string&)>& value) {
  w.begin_entry();
  w.key("action"), w.key(action);
  for (const char* key : {"addr", "size", "stream", "time_us", "frames"}) {
    w.key(key);
    value(key);
  }
  w.end_entry();
}

// Two good entries of the usual keys (the first read the generic way, the second by position).
SnapshotWriter two_good_entries() {
  SnapshotWriter w;
  for (uint64_t i = 0; i < 2; ++i)
    entry(w, i == 0 ? "segment_alloc" : "alloc", [&](const std::string& key) {
      if (key == "addr")
        w.integer(kAddr);
      else if (key == "size")
        w.integer(i == 0 ? 20'971'520 : 512);
      else if (key == "stream")
        w.integer(0);
      else if (key == "time_us")
        w.integer(kTime + i);
      else
        w.op(']'), w.memoize();  // frames: an empty list
    });
  return w;
}

void negative_int4(SnapshotWriter& w, int32_t v) {  // BININT
  w.op('J');
  for (int i = 0; i < 4; ++i) w.op(static_cast<uint8_t>(static_cast<uint32_t>(v) >> (8 * i)));
}

// The third entry: the usual keys with `bad` written for `bad_key`, the rest good.
std::string third_entry_with(const std::string& action, const std::string& bad_key,
                             const std::function<void(SnapshotWriter&)>& bad) {
  SnapshotWriter w = two_good_entries();
  entry(w, action, [&](const std::string& key) {
    if (key == bad_key)
      bad(w);
    else if (key == "addr")
      w.integer(kAddr);
    else if (key == "size")
      w.integer(512);
    else if (key == "stream")
      w.integer(0);
    else if (key == "time_us")
      w.integer(kTime + 2);
    else
      w.op(']'), w.memoize();
  });
  return w.finish();
}

std::string import_error(const std::string& bytes) {
  return testing::error_of<InputError>([&] {
    CollectingSink sink;
    import_pytorch_snapshot_pickle(bytes, "t.pkl", sink);
  });
}

const std::string kAt = "t.pkl: event 2: device 0 trace entry: ";

TEST(SnapshotUsualEntry, EntriesOfTheUsualKeysImportTheirFields) {
  SnapshotWriter w = two_good_entries();
  entry(w, "free_requested", [&](const std::string& key) {
    if (key == "addr")
      w.integer(kAddr);
    else if (key == "size")
      w.integer(512);
    else if (key == "stream")
      w.long1(0x5555'0000'1234, 6);  // a second stream
    else if (key == "time_us")
      w.integer(kTime + 2);
    else
      w.op(']'), w.memoize();
  });
  CollectingSink sink;
  import_pytorch_snapshot_pickle(w.finish(), "t.pkl", sink);
  std::vector<std::tuple<EventKind, uint64_t, uint64_t, uint64_t, uint64_t>> got;
  for (const Event& e : sink.events)
    if (!e.has_flag(kPreexisting) && !e.has_flag(kInferred))
      got.emplace_back(e.kind, e.address, e.size, e.time_ns, e.stream);
  const std::vector<std::tuple<EventKind, uint64_t, uint64_t, uint64_t, uint64_t>> want = {
      {EventKind::segment_alloc, kAddr, 20'971'520, kTime * 1000, 0},
      {EventKind::alloc, kAddr, 512, (kTime + 1) * 1000, 0},
      {EventKind::free_requested, kAddr, 512, (kTime + 2) * 1000, 0x5555'0000'1234},
  };
  EXPECT_EQ(got, want);
}

TEST(SnapshotUsualEntry, ABadActionGivesTheGenericError) {
  EXPECT_EQ(import_error(third_entry_with("bogus", "", nullptr)), kAt + "unknown action 'bogus'");
  SnapshotWriter w = two_good_entries();
  w.begin_entry();
  w.key("action"), w.integer(7);  // an int where the action's str goes
  for (const char* key : {"addr", "size", "stream", "time_us"}) w.key(key), w.integer(1);
  w.key("frames"), w.op(']'), w.memoize();
  w.end_entry();
  EXPECT_EQ(import_error(w.finish()), kAt + "'action' is not a str");
}

// An oom reads device_free, which these keys lack; a user_defined entry is an annotation.
TEST(SnapshotUsualEntry, AnOomOrUserDefinedEntryOfTheUsualKeysIsReadTheGenericWay) {
  EXPECT_EQ(import_error(third_entry_with("oom", "", nullptr)), kAt + "missing key 'device_free'");
  CollectingSink sink;
  import_pytorch_snapshot_pickle(third_entry_with("user_defined", "", nullptr), "t.pkl", sink);
  std::vector<uint64_t> annotation_aux;
  for (const Event& e : sink.events)
    if (e.kind == EventKind::annotation) annotation_aux.push_back(e.aux);
  EXPECT_EQ(annotation_aux, std::vector<uint64_t>{0});  // its text's index, not its addr
}

TEST(SnapshotUsualEntry, AFieldOutOfRangeOrOfAnotherTypeGivesTheGenericError) {
  auto str = [](SnapshotWriter& w) { w.str("x"), w.memoize(); };
  EXPECT_EQ(import_error(third_entry_with("alloc", "addr", [](SnapshotWriter& w) { negative_int4(w, -5); })),
            kAt + "'addr' is out of range (-5)");
  EXPECT_EQ(import_error(third_entry_with("alloc", "size", str)), kAt + "'size' is a str, expected an int");
  EXPECT_EQ(import_error(third_entry_with("alloc", "size", [](SnapshotWriter& w) { negative_int4(w, -1); })),
            kAt + "'size' is out of range (-1)");
  EXPECT_EQ(import_error(third_entry_with("alloc", "stream", str)), kAt + "'stream' is a str, expected an int");
  EXPECT_EQ(import_error(third_entry_with("alloc", "time_us", [](SnapshotWriter& w) { negative_int4(w, -2); })),
            kAt + "'time_us' is out of range (-2)");
  // time_us × 1000 must fit in 64 bits.
  EXPECT_EQ(
      import_error(third_entry_with("alloc", "time_us", [](SnapshotWriter& w) { w.integer(UINT64_MAX / 1000 + 1); })),
      kAt + "'time_us' is out of range (" + std::to_string(UINT64_MAX / 1000 + 1) + ")");
  EXPECT_EQ(import_error(third_entry_with("alloc", "frames", str)), kAt + "'frames' is not a list");
}

// Without time_us (PyTorch before ≈2.1) and without frames, entries are read by position too.
TEST(SnapshotUsualEntry, EntriesWithoutTimeOrFramesImportTimeZeroAndNoStack) {
  SnapshotWriter w;
  const std::vector<std::string> actions = {"segment_alloc", "alloc", "free_requested"};
  for (const std::string& action : actions) {
    w.begin_entry();
    w.key("action"), w.key(action), w.key("addr"), w.integer(kAddr), w.key("size"), w.integer(4096);
    w.key("stream"), w.integer(0);
    w.end_entry();
  }
  CollectingSink sink;
  import_pytorch_snapshot_pickle(w.finish(), "t.pkl", sink);
  std::vector<std::tuple<EventKind, uint64_t, uint32_t>> got;
  for (const Event& e : sink.events)
    if (!e.has_flag(kPreexisting) && !e.has_flag(kInferred)) got.emplace_back(e.kind, e.time_ns, e.stack);
  const std::vector<std::tuple<EventKind, uint64_t, uint32_t>> want = {
      {EventKind::segment_alloc, 0, 0}, {EventKind::alloc, 0, 0}, {EventKind::free_requested, 0, 0}};
  EXPECT_EQ(got, want);
}

// A repeated key's last value counts, on either path (as in Python's dict).
TEST(SnapshotUsualEntry, ARepeatedKeysLastValueCounts) {
  SnapshotWriter w;
  const std::vector<std::string> actions = {"segment_alloc", "alloc", "free_requested"};
  for (const std::string& action : actions) {
    w.begin_entry();
    w.key("action"), w.key(action), w.key("addr"), w.integer(1), w.key("size"), w.integer(4096);
    w.key("stream"), w.integer(0), w.key("addr"), w.integer(kAddr);
    w.end_entry();
  }
  CollectingSink sink;
  import_pytorch_snapshot_pickle(w.finish(), "t.pkl", sink);
  std::vector<uint64_t> addresses;
  for (const Event& e : sink.events)
    if (!e.has_flag(kPreexisting) && !e.has_flag(kInferred)) addresses.push_back(e.address);
  EXPECT_EQ(addresses, std::vector<uint64_t>(3, kAddr));
}

}  // namespace
}  // namespace memreplay
