// The chunk rows a snapshot import encodes while reading (recorder/import/chunks_ahead.h): taken
// on the real traces where nothing is to be added, refused where the output stage adds or reorders
// events, and the file the same byte for byte as the events' own path (TraceWriterOptions::
// encoded_chunks = false) either way.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "proto/chunk_encoder.h"
#include "proto/trace_encoder.h"
#include "proto/trace_reader.h"
#include "proto/trace_writer.h"
#include "recorder/import/import.h"
#include "recorder/import/input/decompress.h"
#include "recorder/import/pytorch/chunks_ahead.h"
#include "results/pickle_writer.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

using testing::real_data_path;

// --- ChunkEncoder: rows now, tables later ---

std::vector<FrameText> stack_of(int n) {
  return {{"f" + std::to_string(n) + ".py", uint32_t(n), "g"}, {"main.py", 1, "main"}};
}

Event event_of(int i, uint32_t stack) {
  return Event{.kind = i % 3 == 0 ? EventKind::alloc : EventKind::free_requested,
               .time_ns = 1000u + 7u * i,
               .address = 4096u * (i % 11),
               .size = 512u + i,
               .stack = stack};
}

// The serial order (every stack, then the events, a chunk every 50) against stacks interned as
// they first appear and rows taken every 50, joined at the end: the same chunks.
TEST(ChunkEncoderRows, RowsJoinedLaterAreTheChunksOfTheSerialOrder) {
  constexpr int kEvents = 175, kPerChunk = 50;
  format::ChunkEncoder serial, ahead;
  for (int s = 1; s <= 9; ++s) serial.intern_stack(stack_of(s));
  std::vector<std::string> expected;
  format::ChunkSummary summary;
  std::vector<format::ChunkRows> rows;
  for (int i = 0; i < kEvents; ++i) {
    const uint32_t stack = static_cast<uint32_t>(i / 20 + 1);  // stack 9 first named by event 160
    serial.add(event_of(i, stack));
    if (i % 20 == 0) EXPECT_EQ(ahead.intern_stack(stack_of(static_cast<int>(stack))), stack);
    ahead.add(event_of(i, stack));
    if (serial.chunk_events() == kPerChunk) expected.emplace_back(serial.encode(summary));
    if (ahead.chunk_events() == kPerChunk) rows.push_back(ahead.take_rows());
  }
  expected.emplace_back(serial.encode(summary));
  rows.push_back(ahead.take_rows());
  ASSERT_EQ(rows.size(), expected.size());
  for (size_t k = 0; k < rows.size(); ++k) {
    SCOPED_TRACE(k);
    EXPECT_EQ(rows[k].summary.first_event, k * kPerChunk);
    EXPECT_EQ(std::string(ahead.encode(rows[k], summary)), expected[k]);
    EXPECT_EQ(summary.event_count, rows[k].summary.event_count);
  }
  EXPECT_EQ(ahead.events_per_kind(), serial.events_per_kind());
  EXPECT_FALSE(ahead.pending());
}

TEST(ChunkEncoderRows, AnnotationsCannotBeTakenAsRows) {
  format::ChunkEncoder encoder;
  encoder.add_annotation(Event{.kind = EventKind::annotation, .time_ns = 5}, {{"k", "v"}});
  EXPECT_THROW(encoder.take_rows(), std::logic_error);
}

class ChunksAheadImport : public testing::TempDirTest {
 protected:
  // Imports `input` twice, with and without the rows encoded ahead; expects the same bytes and
  // returns whether the rows were taken.
  bool rows_taken(const std::string& input, uint32_t events_per_chunk = 65536) {
    bool taken = false;
    for (const bool ahead : {true, false}) {
      TraceWriter writer(path(ahead ? "ahead.mrt" : "events.mrt"), {.events_per_chunk = events_per_chunk,
                                                                    .background_encoding = true,
                                                                    .compression_threads = 3,
                                                                    .encoded_chunks = ahead});
      import_file(input, writer);
      if (ahead)
        taken = writer.wrote_encoded();
      else
        EXPECT_FALSE(writer.wrote_encoded());
    }
    const std::string bytes = testing::read_bytes(path("events.mrt"));
    EXPECT_EQ(testing::read_bytes(path("ahead.mrt")), bytes) << input;
    EXPECT_TRUE(TraceReader(path("ahead.mrt")).complete()) << input;
    return taken;
  }
  std::string write(const std::string& name, const std::string& bytes) {
    std::ofstream(path(name), std::ios::binary) << bytes;
    return path(name);
  }
};

TEST_F(ChunksAheadImport, TakenOnGpt2GenerateCompressedAndPlain) {
  const std::string xz = real_data_path("traces/gpt2_generate.default.pickle.xz").string();
  EXPECT_TRUE(rows_taken(xz));
  EXPECT_EQ(TraceReader(path("ahead.mrt")).footer()->total_events(), 453173u);
  EXPECT_TRUE(rows_taken(write("plain.pickle", read_decompressed(xz))));
  // Many chunks, the last one partial (453,173 = 453 x 1000 + 173).
  EXPECT_TRUE(rows_taken(xz, 1000));
}

// Every shared trace: the same bytes whichever way, and the rows taken exactly where the output
// stage has nothing to add (the traces' own conditions, as the importer tests know them).
TEST_F(ChunksAheadImport, EveryRealTraceIsTheSameBytesEitherWay) {
  const std::vector<std::string> names = testing::real_data_names("traces", ".pickle.xz");
  ASSERT_EQ(names.size(), 9u);
  int taken = 0;
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    const bool ahead = rows_taken(real_data_path("traces/" + name + ".pickle.xz").string());
    taken += ahead;
    if (name == "gpt2_train.truncated") EXPECT_FALSE(ahead);  // starts mid-run
    if (name == "vit_infer_varbatch.emptycache") EXPECT_FALSE(ahead);  // empty_cache inferred
  }
  EXPECT_GE(taken, 1);
}

// --- small snapshots, one fallback condition each ---

constexpr uint64_t kSegment = uint64_t{1} << 20, kSegmentBytes = uint64_t{2} << 20;

struct Entry {
  std::string action;
  uint64_t addr = 0, size = 0, time_us = 0;
  bool empty_cache_stack = false;
  uint32_t line = 7;  // of the entry's one frame: another line, another stack
};

// Each device's trace and what its final `segments` entry holds: one segment at kSegment with a
// block of 512 bytes at kSegment in `final_block` state ("" for no segment at all).
struct Snapshot {
  std::vector<std::vector<Entry>> traces;
  std::vector<std::string> final_block;
  bool private_pool = false;  // the final segments in pool (1, 2)
  bool external_annotation = false;
};

// A segment and a block in it, the block allocated and freed; the segment stays, as PyTorch's
// caching allocator keeps it.
std::vector<Entry> balanced(uint64_t t) {
  return {{"segment_alloc", kSegment, kSegmentBytes, t},
          {"alloc", kSegment, 500, t + 1},
          {"free_requested", kSegment, 500, t + 2},
          {"free_completed", kSegment, 500, t + 3}};
}

void frames(results::PickleWriter& w, bool empty_cache, uint32_t line) {
  w.begin_list();
  w.begin_dict();
  w.name("filename"), w.text(empty_cache ? "/usr/lib/python3/torch/cuda/memory.py" : "train.py");
  w.name("line"), w.integer(line);
  w.name("name"), w.text(empty_cache ? "empty_cache" : "step");
  w.end_dict();
  w.end_list();
}

void final_segment(results::PickleWriter& w, int device, const std::string& block_state, bool private_pool) {
  w.begin_dict();
  w.name("device"), w.integer(device);
  w.name("address"), w.unsigned_integer(kSegment);
  w.name("total_size"), w.unsigned_integer(kSegmentBytes);
  w.name("stream"), w.integer(0);
  w.name("segment_pool_id");
  w.begin_tuple();
  w.integer(private_pool ? 1 : 0), w.integer(private_pool ? 2 : 0);
  w.end_tuple();
  w.name("blocks");
  w.begin_list();
  w.begin_dict();
  w.name("address"), w.unsigned_integer(kSegment);
  w.name("size"), w.integer(512);
  w.name("requested_size"), w.integer(500);
  w.name("state"), w.text(block_state);
  w.end_dict();
  w.end_list();
  w.end_dict();
}

std::string pickle_of(const Snapshot& s) {
  results::PickleWriter w;
  w.begin_dict();
  w.name("segments");
  w.begin_list();
  for (size_t d = 0; d < s.final_block.size(); ++d)
    if (!s.final_block[d].empty()) final_segment(w, static_cast<int>(d), s.final_block[d], s.private_pool);
  w.end_list();
  w.name("device_traces");
  w.begin_list();
  for (const std::vector<Entry>& trace : s.traces) {
    w.begin_list();
    for (const Entry& e : trace) {
      w.begin_dict();
      w.name("action"), w.name(e.action);
      if (e.action == "user_defined") {
        w.name("user_metadata"), w.text("marker");
      } else {
        w.name("addr"), w.unsigned_integer(e.addr);
        w.name("size"), w.unsigned_integer(e.size);
      }
      w.name("stream"), w.integer(0);
      w.name("time_us"), w.unsigned_integer(e.time_us);
      w.name("frames"), frames(w, e.empty_cache_stack, e.line);
      w.end_dict();
    }
    w.end_list();
  }
  w.end_list();
  if (s.external_annotation) {
    w.name("external_annotations");
    w.begin_list();
    w.begin_dict();
    w.name("device"), w.integer(0);
    w.name("time_us"), w.integer(12);
    w.name("stage"), w.text("START");
    w.end_dict();
    w.end_list();
  }
  w.end_dict();
  return w.finish();
}

// The trace the fallbacks below differ from by one thing each: taken.
TEST_F(ChunksAheadImport, TakenOnABalancedTraceOfOneDevice) {
  const Snapshot s{{balanced(10)}, {"inactive"}};
  EXPECT_TRUE(rows_taken(write("balanced.pickle", pickle_of(s)), 3));
  EXPECT_EQ(TraceReader(path("ahead.mrt")).footer()->total_events(), 4u);
}

// Chunks compressed ahead for the stacks interned so far, then a new stack (in a later batch of
// entries than theirs, 8,192 entries): those chunks are compressed again at the end, from the
// columns they kept.
TEST_F(ChunksAheadImport, ChunksCompressedBeforeANewStackAreCompressedAgain) {
  Snapshot s{{balanced(10)}, {"inactive"}};
  for (uint64_t t = 20; t < 20 + 4 * 3000; t += 4) {
    for (Entry e : balanced(t)) {
      if (e.action == "segment_alloc") continue;
      e.line = t >= 20 + 4 * 2990 ? 99 : 7;  // the last rounds' stack is new
      s.traces[0].push_back(e);
    }
  }
  EXPECT_TRUE(rows_taken(write("laterstack.pickle", pickle_of(s)), 1000));
  EXPECT_EQ(TraceReader(path("ahead.mrt")).footer()->stack_count(), 2u);
  EXPECT_EQ(TraceReader(path("ahead.mrt")).footer()->total_events(), 9004u);
}

// The same, where the chunks kept only their compressed bytes: the rows are ruled out.
TEST(ChunksAhead, ACompressedChunkWithoutColumnsMadeStaleIsRuledOut) {
  constexpr int kEntries = 20000, kNewStackAt = 19000;  // in the third batch
  for (const size_t kept : {size_t{0}, ChunksAhead::kKeptColumnBytes}) {
    SCOPED_TRACE(kept);
    ChunksAhead ahead(1000, 3, kept);
    ahead.stack(stack_of(1));
    for (int i = 0; i < kEntries; ++i) {
      if (i == kNewStackAt) ahead.stack(stack_of(2));
      const Event e = event_of(i, 0);
      ahead.entry(0, TraceStep{e.address, e.size, 0, e.kind}, e.time_ns, 0, i >= kNewStackAt ? 2 : 1);
    }
    const std::optional<ChunksAhead::Encoded> encoded = ahead.finish();
    EXPECT_EQ(encoded.has_value(), kept > 0);
    if (encoded) {
      EXPECT_EQ(encoded->rows.size(), 20u);
      EXPECT_EQ(encoded->entries, 20000u);
      EXPECT_TRUE(encoded->rows[1].compressed.has_value());
      EXPECT_FALSE(encoded->encoder.compressed_matches(encoded->rows[1], 3));  // stack 2 came after it
      EXPECT_TRUE(encoded->encoder.compressed_matches(encoded->rows[18], 3));  // cut after stack 2
    }
  }
}

TEST_F(ChunksAheadImport, FallsBackWhenTheTraceStartsMidRun) {
  const Snapshot s{{{{"alloc", kSegment + 512, 100, 10},
                     {"free_requested", kSegment + 512, 100, 11},
                     {"free_completed", kSegment + 512, 100, 12}}},
                   {"active_allocated"}};
  EXPECT_FALSE(rows_taken(write("midrun.pickle", pickle_of(s))));
  EXPECT_TRUE(TraceReader(path("ahead.mrt")).header().starts_mid_run());
}

TEST_F(ChunksAheadImport, FallsBackWhenAnEmptyCacheIsInferred) {
  Snapshot s{{balanced(10)}, {""}};
  s.traces[0].push_back({"segment_free", kSegment, kSegmentBytes, 14, /*empty_cache_stack=*/true});
  EXPECT_FALSE(rows_taken(write("emptycache.pickle", pickle_of(s))));
  EXPECT_EQ(TraceReader(path("ahead.mrt")).footer()->events_per_kind().at(uint32_t(EventKind::empty_cache)), 1u);
}

TEST_F(ChunksAheadImport, FallsBackOnTwoDevices) {
  const Snapshot s{{balanced(10), balanced(12)}, {"inactive", "inactive"}};
  EXPECT_FALSE(rows_taken(write("twodevices.pickle", pickle_of(s))));
  EXPECT_EQ(TraceReader(path("ahead.mrt")).header().devices_size(), 2);
}

TEST_F(ChunksAheadImport, FallsBackOnAnExternalAnnotation) {
  Snapshot s{{balanced(10)}, {"inactive"}};
  s.external_annotation = true;
  EXPECT_FALSE(rows_taken(write("annotation.pickle", pickle_of(s))));
}

TEST_F(ChunksAheadImport, FallsBackOnAUserDefinedEntry) {
  Snapshot s{{balanced(10)}, {"inactive"}};
  s.traces[0].insert(s.traces[0].begin() + 2, Entry{"user_defined", 0, 0, 11});
  EXPECT_FALSE(rows_taken(write("userdefined.pickle", pickle_of(s))));
}

TEST_F(ChunksAheadImport, FallsBackOnAPrivatePool) {
  Snapshot s{{{{"segment_alloc", kSegment, kSegmentBytes, 10}, {"alloc", kSegment, 500, 11}}}, {"active_allocated"}};
  s.private_pool = true;
  EXPECT_FALSE(rows_taken(write("pool.pickle", pickle_of(s))));
  EXPECT_EQ(TraceReader(path("ahead.mrt")).header().pools_size(), 1);
  EXPECT_FALSE(TraceReader(path("ahead.mrt")).header().starts_mid_run());
}

// Rows cut elsewhere than the writer cuts its chunks are refused, not written.
TEST_F(ChunksAheadImport, RowsCutElsewhereAreRefused) {
  format::ChunkEncoder encoder;
  std::vector<format::ChunkRows> rows;
  for (int i = 0; i < 30; ++i) {
    encoder.add(event_of(i, 0));
    if (encoder.chunk_events() == 20) rows.push_back(encoder.take_rows());
  }
  rows.push_back(encoder.take_rows());
  TraceWriter writer(path("cut.mrt"), {.events_per_chunk = 25});
  EXPECT_THROW(writer.write_encoded(proto::TraceHeader(), std::move(encoder), rows), std::logic_error);
  TraceWriter refusing(path("refusing.mrt"), {.encoded_chunks = false});
  EXPECT_FALSE(refusing.encoded_chunk_format().has_value());
}

}  // namespace
}  // namespace memreplay
