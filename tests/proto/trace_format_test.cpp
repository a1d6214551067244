// The reader against hand-made and seeked files, and what only TraceWriter does (its atomic
// placement). What every writer guarantees (round trips, truncation, flipped bytes, options) is
// tests/writer_contract_test.cpp.
#include <gtest/gtest.h>
#include <zstd.h>

#include <cstring>
#include <filesystem>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "proto/chunk_decoder.h"
#include "proto/framing.h"
#include "proto/input_error.h"
#include "proto/trace_reader.h"
#include "proto/trace_writer.h"
#include "tests/support/sample_trace.h"

namespace memreplay {
namespace {

namespace fs = std::filesystem;
using testing::sample_stacks;
using testing::sample_trace;
using testing::SampleTrace;
using testing::write_bytes;

class TraceFormat : public ::testing::Test, public testing::TempDir {
 protected:
  void SetUp() override { make_dir("memreplay_trace_format_"); }
  void TearDown() override { remove_dir(); }
};

proto::TraceHeader sample_header() {
  proto::TraceHeader h;
  h.set_source("api");
  h.set_pid(4242);
  return h;
}

TEST_F(TraceFormat, StacksOfChunksNotYetReadAreFound) {
  const SampleTrace t = sample_trace(30);
  TraceWriter writer(path("t.mrt"), {.events_per_chunk = 4});
  writer.begin(sample_header());
  // Each stack first appears in a different chunk.
  for (size_t i = 0; i < sample_stacks().size(); ++i) {
    Event e = t.events[0];
    e.kind = EventKind::alloc;
    e.stack = writer.intern_stack(sample_stacks()[i]);
    for (int k = 0; k < 4; ++k) writer.append(e);
  }
  writer.finish();

  TraceReader reader(path("t.mrt"));
  EXPECT_EQ(reader.stack_frames(4), sample_stacks()[3]);
  EXPECT_EQ(reader.stack_frames(2), sample_stacks()[1]);
  reader.seek_to_time(t.events[0].time_ns);
  std::vector<Event> batch;
  while (reader.next_batch(batch)) EXPECT_EQ(reader.stack_frames(batch[0].stack), sample_stacks()[batch[0].stack - 1]);
}

TEST_F(TraceFormat, AnnotationsAfterASeekResolveStringsOfSkippedChunks) {
  TraceWriter writer(path("t.mrt"), {.events_per_chunk = 2});
  writer.begin(sample_header());
  Event e{.kind = EventKind::annotation, .time_ns = 10};
  const KeyValues kv = {{"phase", "forward"}};
  writer.append_annotation(e, kv);  // chunk 0 introduces the strings
  for (uint64_t t = 11; t < 20; ++t) {
    e.time_ns = t;
    writer.append_annotation(e, kv);
  }
  writer.finish();

  TraceReader reader(path("t.mrt"));
  reader.seek_to_time(17);
  std::vector<Event> batch;
  ASSERT_TRUE(reader.next_batch(batch));
  EXPECT_EQ(batch[0].time_ns, 16u);
  EXPECT_EQ(reader.annotation(batch[1]), kv);
}

TEST_F(TraceFormat, NewerMajorVersionIsRefused) {
  proto::TraceHeader header;
  header.set_format_major(2);
  write_bytes(path("v2.mrt"), std::string(format::kFileMagic) +
                                  format::encode_record(format::RecordType::header, header.SerializeAsString()));
  try {
    TraceReader reader(path("v2.mrt"));
    FAIL() << "a version 2 file was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("format version 2 is newer than this reader's 1; upgrade memreplay"),
              std::string::npos)
        << e.what();
  }
}

// Hand-made files: what a buggy or hostile writer could produce.
class HandMadeTrace {
 public:
  HandMadeTrace() {
    proto::TraceHeader header;
    header.set_format_major(1);
    bytes_ =
        std::string(format::kFileMagic) + format::encode_record(format::RecordType::header, header.SerializeAsString());
  }
  static proto::Chunk valid_chunk() {
    proto::Chunk c;
    c.set_first_stack_id(1);
    for (int i = 0; i < 3; ++i) {
      c.add_kind(static_cast<uint32_t>(EventKind::alloc));
      c.add_time_delta(1);
      c.add_device(0);
      c.add_stream(0);
      c.add_address_delta(512);
      c.add_size(512);
      c.add_stack(0);
    }
    return c;
  }
  HandMadeTrace& chunk(const proto::Chunk& c) {
    const std::string raw = c.SerializeAsString();
    std::string packed(ZSTD_compressBound(raw.size()), '\0');
    packed.resize(ZSTD_compress(packed.data(), packed.size(), raw.data(), raw.size(), 1));
    return record(static_cast<uint32_t>(format::RecordType::chunk), packed);
  }
  HandMadeTrace& record(uint32_t type, std::string_view payload) {
    format::put_u32(bytes_, type);
    format::put_u32(bytes_, static_cast<uint32_t>(payload.size()));
    format::put_u32(bytes_, format::payload_crc(payload));
    bytes_.append(payload);
    return *this;
  }
  std::string& bytes() { return bytes_; }

 private:
  std::string bytes_;
};

TEST_F(TraceFormat, MalformedChunksThrowInputErrorAtTheirOffset) {
  auto expect_rejected = [&](HandMadeTrace& t, const std::string& message) {
    SCOPED_TRACE(message);
    t.chunk(HandMadeTrace::valid_chunk());  // so the bad chunk is not the last record
    write_bytes(path("bad.mrt"), t.bytes());
    try {
      TraceReader::read_all(path("bad.mrt"));
      FAIL() << "accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("bad.mrt: byte "), std::string::npos) << e.what();
    }
  };
  {
    proto::Chunk c = HandMadeTrace::valid_chunk();
    c.set_kind(1, 99);
    HandMadeTrace t;
    expect_rejected(t.chunk(c), "invalid event kind");
  }
  {
    proto::Chunk c = HandMadeTrace::valid_chunk();
    c.add_size(1);
    HandMadeTrace t;
    expect_rejected(t.chunk(c), "column size does not hold one value per event");
  }
  {
    proto::Chunk c = HandMadeTrace::valid_chunk();
    c.mutable_time_delta()->RemoveLast();
    HandMadeTrace t;
    expect_rejected(t.chunk(c), "column time_delta does not hold one value per event");
  }
  {
    proto::Chunk c = HandMadeTrace::valid_chunk();
    c.add_flags(kPreexisting);
    HandMadeTrace t;
    expect_rejected(t.chunk(c), "column flags does not hold one value per event");
  }
  {
    proto::Chunk c = HandMadeTrace::valid_chunk();
    c.set_stack(2, 1);
    HandMadeTrace t;
    expect_rejected(t.chunk(c), "event 2: stack id 1 out of range");
  }
  {
    proto::Chunk c = HandMadeTrace::valid_chunk();
    c.add_frames()->set_filename(0);
    HandMadeTrace t;
    expect_rejected(t.chunk(c), "string id out of range");
  }
  {
    proto::Chunk c = HandMadeTrace::valid_chunk();
    c.set_kind(0, static_cast<uint32_t>(EventKind::annotation));
    HandMadeTrace t;
    expect_rejected(t.chunk(c), "annotations for 1 annotation events");
  }
  {
    HandMadeTrace t;
    expect_rejected(t.record(static_cast<uint32_t>(format::RecordType::chunk), "not zstd"), "not a zstd frame");
  }
  {
    HandMadeTrace t;
    expect_rejected(t.record(9, "x"), "unknown record type 9");
  }
  {
    HandMadeTrace t;
    t.chunk(HandMadeTrace::valid_chunk());
    t.bytes().back() ^= 1;
    expect_rejected(t, "fails its CRC check");
  }
  {
    HandMadeTrace t;
    expect_rejected(t.chunk(HandMadeTrace::valid_chunk()), "chunk starts at event 0, expected 3");
  }
}

TEST_F(TraceFormat, DecoderStaysInsideMalformedColumns) {
  // Three events whose aux column, the last field, holds 30 bytes of unterminated varint. The
  // input sits in an exact-size allocation so that a sanitizer build sees any read past it.
  std::string bytes;
  auto column = [&](int field, const std::string& values) {
    bytes += static_cast<char>(field << 3 | 2);
    bytes += static_cast<char>(values.size());
    bytes += values;
  };
  bytes += "\x80\x01\x01";  // first_stack_id (field 16) = 1
  column(proto::Chunk::kKindFieldNumber, std::string(3, '\1'));
  for (int field = proto::Chunk::kTimeDeltaFieldNumber; field < proto::Chunk::kAuxFieldNumber; ++field)
    column(field, std::string(3, '\0'));
  column(proto::Chunk::kAuxFieldNumber, std::string(30, '\xff'));
  const auto exact = std::make_unique<char[]>(bytes.size());
  std::memcpy(exact.get(), bytes.data(), bytes.size());

  proto::Chunk chunk;
  std::vector<Event> events;
  const auto error = ChunkDecoder().decode(std::string_view(exact.get(), bytes.size()), chunk, events);
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(*error, "column aux does not hold one value per event");
}

TEST_F(TraceFormat, SeekToTimeLandsOnTheRightChunk) {
  for (bool finished : {true, false}) {
    SCOPED_TRACE(finished ? "with footer" : "without footer");
    TraceWriter writer(path("t.mrt"), {.events_per_chunk = 10, .atomic = finished});
    writer.begin(sample_header());
    for (uint64_t i = 0; i < 50; ++i) writer.append(Event{.time_ns = 1000 + 10 * i, .address = i});
    if (finished)
      writer.finish();
    else
      writer.flush();

    TraceReader reader(path("t.mrt"));
    std::vector<Event> batch;
    reader.seek_to_time(1000 + 10 * 23);
    ASSERT_TRUE(reader.next_batch(batch));
    EXPECT_EQ(reader.batch_first_event(), 20u);
    EXPECT_EQ(batch.front().address, 20u);
    reader.seek_to_time(1000 + 10 * 29);  // the last event of that chunk
    ASSERT_TRUE(reader.next_batch(batch));
    EXPECT_EQ(batch.front().address, 20u);
    reader.seek_to_time(1000 + 10 * 29 + 1);
    ASSERT_TRUE(reader.next_batch(batch));
    EXPECT_EQ(batch.front().address, 30u);
    reader.seek_to_time(0);
    ASSERT_TRUE(reader.next_batch(batch));
    EXPECT_EQ(batch.front().address, 0u);
    reader.seek_to_time(1000 + 10 * 50);
    EXPECT_FALSE(reader.next_batch(batch));
    reader.rewind();
    ASSERT_TRUE(reader.next_batch(batch));
    EXPECT_EQ(reader.batch_first_event(), 0u);
  }
}

TEST_F(TraceFormat, AtomicWriterLeavesNothingWithoutFinish) {
  {
    TraceWriter writer(path("t.mrt"), {.events_per_chunk = 4});
    writer.begin(sample_header());
    for (uint64_t i = 0; i < 20; ++i) writer.append(Event{.time_ns = i});
    EXPECT_FALSE(fs::exists(path("t.mrt")));
  }
  EXPECT_TRUE(fs::is_empty(dir_)) << "a file was left behind";

  TraceWriter writer(path("t.mrt"));
  writer.begin(sample_header());
  for (uint64_t i = 0; i < 20; ++i) writer.append(Event{.time_ns = i});
  writer.finish();
  EXPECT_TRUE(fs::exists(path("t.mrt")));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
}

TEST_F(TraceFormat, TraceWriterRejectsEventsBeforeBegin) {
  TraceWriter writer(path("t.mrt"));
  EXPECT_THROW(writer.append(Event{}), std::logic_error);
  EXPECT_THROW(writer.intern_stack({}), std::logic_error);
  EXPECT_THROW(writer.finish(), std::logic_error);
  writer.begin(sample_header());
  EXPECT_THROW(writer.begin(sample_header()), std::logic_error);
}

}  // namespace
}  // namespace memreplay
