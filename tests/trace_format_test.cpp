// TraceWriter -> .mrt -> TraceReader: fidelity, damage, truncation, seeking, file placement.
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "proto/framing.h"
#include "proto/input_error.h"
#include "recorder/import/trace_writer.h"
#include "proto/chunk_decoder.h"
#include "proto/trace_reader.h"
#include "proto/version.h"

namespace memreplay {
namespace {

namespace fs = std::filesystem;

// A fresh directory per test, removed afterwards.
class TraceFormat : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("memreplay_trace_format_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& path, std::string_view bytes) {
  // A new file rather than a truncated one: ext4 flushes a file truncated with unwritten data,
  // which makes thousands of rewrites crawl.
  fs::remove(path);
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

proto::TraceHeader sample_header() {
  proto::TraceHeader h;
  h.set_source("api");
  h.set_source_file("/data/run.pickle");
  h.set_capture_time_ns(1'722'000'000'123'456'789ull);
  h.set_command_line("python train.py --batch 64");
  h.set_pid(4242);
  proto::DeviceInfo* d0 = h.add_devices();
  d0->set_index(0);
  d0->set_name("NVIDIA H200");
  d0->set_total_memory(150'109'880'320ull);
  h.add_devices()->set_index(1);
  (*h.mutable_allocator_settings())["expandable_segments"] = "True";
  (*h.mutable_allocator_settings())["max_split_size"] = "-1";
  h.set_starts_mid_run(true);
  return h;
}

const std::vector<std::vector<FrameText>>& sample_stacks() {
  static const std::vector<std::vector<FrameText>> stacks = {
      {{"model.py", 12, "forward"}, {"train.py", 40, "step"}},
      {{"ops.py", 7, "matmul"}, {"model.py", 12, "forward"}, {"train.py", 40, "step"}},
      {},
      {{"train.py", 41, "step"}},
  };
  return stacks;
}

// One trace exercising every field: all kinds, flag bits, aux, extreme values, non-monotonic
// times, addresses going both ways, stacks and annotations (with and without metadata).
struct SampleTrace {
  std::vector<Event> events;
  std::vector<KeyValues> annotations;  // of the annotation events, in order
  std::vector<uint32_t> stack_ids;     // of sample_stacks()
};

SampleTrace sample_trace(size_t count) {
  SampleTrace t;
  for (size_t i = 0; i < sample_stacks().size(); ++i) t.stack_ids.push_back(static_cast<uint32_t>(i + 1));
  for (size_t i = 0; i < count; ++i) {
    Event e;
    e.kind = static_cast<EventKind>(1 + i % (kEventKindCount - 1));
    e.device = static_cast<uint32_t>(i % 3);
    e.time_ns = 1'722'000'000'000'000'000ull + i * 1000 - (i % 5 == 0 ? 2500 : 0);
    e.stream = i % 4 == 0 ? 0 : 0x7f00'0000'1200ull + i % 2;
    e.address = i % 10 == 9 ? ~uint64_t{0} - 15 : 0x7f12'3400'0000ull + (i * 7919 % 13) * 4096;
    e.size = (i % 6) * 512 + 1;
    e.stack = i % 3 == 0 ? 0 : t.stack_ids[i % t.stack_ids.size()];
    e.flags = i % 7 == 0 ? kPreexisting : i % 11 == 0 ? (kFailed | kInferred) : 0;
    e.aux = i % 9 == 0 ? ~uint64_t{0} - i : 0;
    if (i == 3) e.time_ns = 0;
    if (e.kind == EventKind::annotation) {
      e.aux = 0;  // the writer assigns it
      KeyValues kv;
      if (t.annotations.size() % 2 == 0) kv = {{"name", "step " + std::to_string(i)}, {"phase", "forward"}};
      t.annotations.push_back(kv);
    }
    t.events.push_back(e);
  }
  return t;
}

void write_trace(const std::string& path, const SampleTrace& t, TraceWriterOptions options,
                 bool finish = true) {
  TraceWriter writer(path, options);
  writer.begin(sample_header());
  for (const auto& frames : sample_stacks()) writer.intern_stack(frames);
  size_t annotation = 0;
  for (const Event& e : t.events) {
    if (e.kind != EventKind::annotation) {
      writer.append(e);
      continue;
    }
    const KeyValues& kv = t.annotations[annotation++];
    if (kv.empty())
      writer.append(e);  // an annotation without metadata may come this way too
    else
      writer.append_annotation(e, kv);
  }
  if (finish)
    writer.finish();
  else
    writer.flush();
}

// Annotation events' aux is the writer's business (an index into their chunk): compare the rest.
std::vector<Event> without_annotation_aux(std::vector<Event> events) {
  for (Event& e : events)
    if (e.kind == EventKind::annotation) e.aux = 0;
  return events;
}

struct ReadBack {
  std::vector<Event> events;
  std::vector<KeyValues> annotations;
  bool complete = false;
};

ReadBack read_back(const std::string& path) {
  TraceReader reader(path);
  ReadBack r;
  r.complete = reader.complete();
  std::vector<Event> batch;
  while (reader.next_batch(batch)) {
    for (const Event& e : batch)
      if (e.kind == EventKind::annotation) r.annotations.push_back(reader.annotation(e));
    r.events.insert(r.events.end(), batch.begin(), batch.end());
  }
  r.events = without_annotation_aux(std::move(r.events));
  return r;
}

// Checks that what was read is exactly the first events of the trace, annotations included.
void expect_prefix(const ReadBack& r, const SampleTrace& t) {
  ASSERT_LE(r.events.size(), t.events.size());
  EXPECT_TRUE(std::equal(r.events.begin(), r.events.end(), t.events.begin()));
  ASSERT_LE(r.annotations.size(), t.annotations.size());
  EXPECT_TRUE(std::equal(r.annotations.begin(), r.annotations.end(), t.annotations.begin()));
}

TEST_F(TraceFormat, RoundTripKeepsEveryFieldAcrossChunks) {
  const SampleTrace t = sample_trace(100);
  write_trace(path("t.mrt"), t, {.events_per_chunk = 7});

  TraceReader reader(path("t.mrt"));
  EXPECT_TRUE(reader.complete());
  EXPECT_EQ(reader.truncation_note(), std::nullopt);

  proto::TraceHeader expected = sample_header();
  expected.set_format_major(format::kFormatMajor);
  expected.set_format_minor(format::kFormatMinor);
  expected.set_producer(std::string(kProducer));
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(reader.header(), expected))
      << reader.header().DebugString();

  std::vector<Event> all, batch;
  std::vector<KeyValues> annotations;
  size_t batches = 0;
  while (reader.next_batch(batch)) {
    EXPECT_EQ(reader.batch_first_event(), all.size());
    EXPECT_LE(batch.size(), 7u);
    for (const Event& e : batch)
      if (e.kind == EventKind::annotation) annotations.push_back(reader.annotation(e));
    all.insert(all.end(), batch.begin(), batch.end());
    ++batches;
  }
  EXPECT_EQ(batches, 15u);
  EXPECT_EQ(without_annotation_aux(all), t.events);
  EXPECT_EQ(annotations, t.annotations);
  for (size_t i = 0; i < t.stack_ids.size(); ++i)
    EXPECT_EQ(reader.stack_frames(t.stack_ids[i]), sample_stacks()[i]);
  EXPECT_TRUE(reader.stack_frames(0).empty());
  EXPECT_THROW(reader.stack_frames(99), std::out_of_range);

  const proto::Footer* footer = reader.footer();
  ASSERT_NE(footer, nullptr);
  EXPECT_EQ(footer->total_events(), 100u);
  EXPECT_EQ(footer->chunks_size(), 15);
  EXPECT_EQ(footer->stack_count(), sample_stacks().size());
  EXPECT_EQ(footer->frame_count(), 4u);
  EXPECT_EQ(footer->events_per_kind().at(static_cast<uint32_t>(EventKind::alloc)),
            std::count_if(t.events.begin(), t.events.end(),
                          [](const Event& e) { return e.kind == EventKind::alloc; }));
  EXPECT_EQ(footer->min_time_ns(), 0u);
  EXPECT_EQ(footer->max_time_ns(), t.events[99].time_ns);
}

TEST_F(TraceFormat, ValuesOfEveryMagnitudeRoundTrip) {
  // Every varint length from 1 to 10 bytes, in columns long enough for the reader's fast path.
  std::mt19937_64 rng(7);
  auto any_magnitude = [&] { return rng() >> (rng() % 64); };
  std::vector<Event> events;
  for (int i = 0; i < 5000; ++i) {
    events.push_back(Event{.kind = static_cast<EventKind>(1 + rng() % 10),
                           .device = static_cast<uint32_t>(any_magnitude()),
                           .time_ns = any_magnitude(),
                           .stream = any_magnitude(),
                           .address = any_magnitude(),
                           .size = any_magnitude(),
                           .flags = static_cast<uint32_t>(any_magnitude()),
                           .aux = any_magnitude()});
  }
  TraceWriter writer(path("t.mrt"), {.events_per_chunk = 3000});
  writer.begin(sample_header());
  for (const Event& e : events) writer.append(e);
  writer.finish();
  EXPECT_EQ(TraceReader::read_all(path("t.mrt")), events);
}

TEST_F(TraceFormat, StringsThatAreNotUtf8AreRepairedNotFatal) {
  // Protobuf will not parse a string field that is not UTF-8, so the writer must not write one.
  proto::TraceHeader header = sample_header();
  header.set_command_line("python \xff.py");
  (*header.mutable_allocator_settings())["k\xc0"] = "v";
  TraceWriter writer(path("t.mrt"));
  writer.begin(header);
  const uint32_t stack = writer.intern_stack(std::vector<FrameText>{{"caf\xe9.py", 3, "f\xed\xa0\x80"}});
  writer.append_annotation(Event{.kind = EventKind::annotation, .stack = stack}, {{"name", "\xf5"}});
  writer.finish();

  TraceReader reader(path("t.mrt"));
  EXPECT_EQ(reader.header().command_line(), "python \uFFFD.py");
  EXPECT_EQ(reader.header().allocator_settings().count("k\uFFFD"), 1u);
  std::vector<Event> batch;
  ASSERT_TRUE(reader.next_batch(batch));
  EXPECT_EQ(reader.annotation(batch[0]), (KeyValues{{"name", "\uFFFD"}}));
  EXPECT_EQ(reader.stack_frames(stack), (std::vector<FrameText>{{"caf\uFFFD.py", 3, "f\uFFFD\uFFFD\uFFFD"}}));
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
  while (reader.next_batch(batch))
    EXPECT_EQ(reader.stack_frames(batch[0].stack), sample_stacks()[batch[0].stack - 1]);
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

// A small finished trace (3 chunks) and where its records end.
struct SmallTrace {
  SampleTrace trace = sample_trace(12);
  std::string bytes;
  uint64_t first_chunk = 0;
  uint64_t footer = 0;
  std::vector<std::pair<uint64_t, size_t>> chunk_ends;  // (end offset, events up to there)
};

SmallTrace small_trace(const std::string& path) {
  SmallTrace s;
  write_trace(path, s.trace, {.events_per_chunk = 4});
  s.bytes = read_bytes(path);
  s.footer = format::get_u64(reinterpret_cast<const unsigned char*>(s.bytes.data()) + s.bytes.size() -
                             format::kTrailerBytes);
  const TraceReader reader(path);
  const proto::Footer& footer = *reader.footer();
  s.first_chunk = footer.chunks(0).offset();
  for (int i = 0; i < footer.chunks_size(); ++i) {
    const uint64_t end = i + 1 < footer.chunks_size() ? footer.chunks(i + 1).offset() : s.footer;
    s.chunk_ends.emplace_back(end, footer.chunks(i).first_event() + footer.chunks(i).event_count());
  }
  return s;
}

TEST_F(TraceFormat, TruncatedAtEveryByteReadsItsWholeChunks) {
  const SmallTrace s = small_trace(path("whole.mrt"));
  ASSERT_EQ(s.chunk_ends.size(), 3u);
  for (size_t cut = 0; cut < s.bytes.size(); ++cut) {
    SCOPED_TRACE("cut at byte " + std::to_string(cut));
    write_bytes(path("cut.mrt"), std::string_view(s.bytes).substr(0, cut));
    if (cut < s.first_chunk) {  // the header record is not whole: nothing is readable
      EXPECT_THROW(read_back(path("cut.mrt")), InputError);
      continue;
    }
    size_t whole = 0;
    for (const auto& [end, events] : s.chunk_ends)
      if (end <= cut) whole = events;
    const ReadBack r = read_back(path("cut.mrt"));
    EXPECT_FALSE(r.complete);
    EXPECT_EQ(r.events.size(), whole);
    expect_prefix(r, s.trace);
    EXPECT_TRUE(TraceReader(path("cut.mrt")).truncation_note().has_value());
  }
}

// Reads a damaged file fully (events, annotations, stacks): it must throw InputError or give
// correct values.
void expect_error_or_correct_prefix(const std::string& path, const SampleTrace& t) {
  try {
    TraceReader reader(path);
    std::vector<Event> all, batch;
    std::vector<KeyValues> annotations;
    while (reader.next_batch(batch)) {
      for (const Event& e : batch) {
        if (e.kind == EventKind::annotation) annotations.push_back(reader.annotation(e));
        if (e.stack != 0) {
          EXPECT_EQ(reader.stack_frames(e.stack), sample_stacks()[e.stack - 1]);
        }
      }
      all.insert(all.end(), batch.begin(), batch.end());
    }
    expect_prefix(ReadBack{without_annotation_aux(all), annotations, reader.complete()}, t);
    if (reader.complete()) {
      EXPECT_EQ(all.size(), t.events.size());
    }
  } catch (const InputError&) {
  }
}

TEST_F(TraceFormat, FlippedBytesGiveInputErrorOrACorrectPrefix) {
  const SmallTrace s = small_trace(path("whole.mrt"));
  // The streaming writer's file is the finished one without footer and trailer.
  write_trace(path("live.mrt"), s.trace, {.events_per_chunk = 4, .atomic = false}, false);
  const std::string unfinished = read_bytes(path("live.mrt"));
  ASSERT_EQ(unfinished, s.bytes.substr(0, s.footer));

  for (const std::string* original : {&s.bytes, &unfinished}) {
    for (size_t at = 0; at < original->size(); ++at) {
      for (unsigned char mask : {0x01, 0xff}) {
        SCOPED_TRACE((original == &s.bytes ? "finished, byte " : "unfinished, byte ") + std::to_string(at) +
                     " ^ " + std::to_string(mask));
        std::string damaged = *original;
        damaged[at] = static_cast<char>(damaged[at] ^ mask);
        write_bytes(path("flipped.mrt"), damaged);
        expect_error_or_correct_prefix(path("flipped.mrt"), s.trace);
      }
    }
  }
}

TEST_F(TraceFormat, NewerMajorVersionIsRefused) {
  proto::TraceHeader header;
  header.set_format_major(2);
  write_bytes(path("v2.mrt"),
              std::string(format::kFileMagic) +
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
    bytes_ = std::string(format::kFileMagic) +
             format::encode_record(format::RecordType::header, header.SerializeAsString());
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
    expect_rejected(t.record(static_cast<uint32_t>(format::RecordType::chunk), "not zstd"),
                    "not a zstd frame");
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

TEST_F(TraceFormat, UnwritablePathThrowsInputErrorNamingIt) {
  const std::string missing = path("no/such/dir/t.mrt");
  for (bool atomic : {true, false}) {
    try {
      TraceWriter writer(missing, {.atomic = atomic});
      FAIL() << "opened " << missing;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
    }
  }
}

TEST_F(TraceFormat, FullDiskThrowsInputErrorNamingThePath) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  TraceWriter writer("/dev/full", {.atomic = false});
  try {
    writer.begin(sample_header());
    FAIL() << "writing to /dev/full succeeded";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/dev/full: cannot write"), std::string::npos) << e.what();
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

  write_trace(path("t.mrt"), sample_trace(20), {});
  EXPECT_TRUE(fs::exists(path("t.mrt")));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
}

TEST_F(TraceFormat, StreamingWriterLeavesAReadablePrefix) {
  const SampleTrace t = sample_trace(25);
  {
    TraceWriter writer(path("live.mrt"), {.events_per_chunk = 10, .atomic = false});
    writer.begin(sample_header());
    for (const auto& frames : sample_stacks()) writer.intern_stack(frames);
    size_t annotation = 0;
    for (const Event& e : t.events) {
      if (e.kind == EventKind::annotation)
        writer.append_annotation(e, t.annotations[annotation++]);
      else
        writer.append(e);
    }
    // Full chunks are in the file already; the last five events wait for flush().
    ReadBack r = read_back(path("live.mrt"));
    EXPECT_FALSE(r.complete);
    EXPECT_EQ(r.events.size(), 20u);
    expect_prefix(r, t);

    writer.flush();
    r = read_back(path("live.mrt"));
    EXPECT_EQ(r.events.size(), 25u);
    expect_prefix(r, t);
  }  // abandoned without finish()
  TraceReader reader(path("live.mrt"));
  EXPECT_FALSE(reader.complete());
  EXPECT_EQ(reader.footer(), nullptr);
  ASSERT_TRUE(reader.truncation_note().has_value());
  EXPECT_NE(reader.truncation_note()->find("without a footer"), std::string::npos)
      << *reader.truncation_note();
  EXPECT_EQ(without_annotation_aux(TraceReader::read_all(path("live.mrt"))), t.events);
}

TEST_F(TraceFormat, WriterRejectsMisuse) {
  TraceWriter writer(path("t.mrt"));
  EXPECT_THROW(writer.append(Event{}), std::logic_error);
  writer.begin(sample_header());
  EXPECT_THROW(writer.append(Event{.kind = static_cast<EventKind>(0)}), std::logic_error);
  EXPECT_THROW(writer.append(Event{.stack = 1}), std::logic_error);
  EXPECT_THROW(writer.append_annotation(Event{.kind = EventKind::alloc}, {}), std::logic_error);
}

TEST_F(TraceFormat, EmptyTraceRoundTrips) {
  TraceWriter writer(path("t.mrt"));
  writer.begin(sample_header());
  writer.finish();
  TraceReader reader(path("t.mrt"));
  EXPECT_TRUE(reader.complete());
  EXPECT_EQ(reader.footer()->total_events(), 0u);
  std::vector<Event> batch;
  EXPECT_FALSE(reader.next_batch(batch));
}

}  // namespace
}  // namespace memreplay
