// The writer contract: what every .mrt writer guarantees, checked over each of them.
//   TraceWriter (recorder/import/), atomic (encoding in the caller's thread or its own, compression on
//   threads of its own or not) and streaming; LiveTraceWriter (recorder/live/).
// The live recorders (LiveRecorder, the C++ and C recording APIs) write through LiveTraceWriter:
// they add buffering and ordering, not another encoding (tests/live_recorder_test.cpp).
//
// The contract: every field of every event kind, of the header, of stacks and annotations reads
// back as written; the bytes are protobuf's own encoding of the messages of trace.proto; a file
// cut at any byte reads as exactly its whole chunks before the cut, or fails with a one-line
// error; a flipped byte anywhere gives a one-line error naming the file and the offset, or a read
// whose values are all correct; options and misuse are refused the same way by every writer.
// ChunkEncoder on its own, against protobuf's serializer: chunk_encoder_test.cpp.
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>
#include <zstd.h>

#include <functional>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "proto/framing.h"
#include "proto/input_error.h"
#include "proto/trace.pb.h"
#include "proto/trace_reader.h"
#include "proto/trace_writer.h"
#include "proto/version.h"
#include "recorder/import/import.h"
#include "recorder/live/live_trace_writer.h"
#include "tests/support/sample_trace.h"

namespace memreplay {
namespace {

using google::protobuf::util::MessageDifferencer;
using testing::read_back;
using testing::read_bytes;
using testing::ReadBack;
using testing::sample_stacks;
using testing::sample_trace;
using testing::SampleTrace;
using testing::write_bytes;

// One writer, whichever it is, behind one interface.
class AnyWriter {
 public:
  virtual ~AnyWriter() = default;
  virtual uint32_t intern_stack(std::span<const FrameText> frames) = 0;
  virtual void append(const Event& e) = 0;
  virtual void append_annotation(const Event& e, const KeyValues& kv) = 0;
  virtual void flush() = 0;
  virtual void finish() = 0;
};

struct WriterOptions {
  uint32_t events_per_chunk = 65536;
  int zstd_level = 3;
};

template <typename Writer>
class Adapter final : public AnyWriter {
 public:
  template <typename... Args>
  explicit Adapter(Args&&... args) : writer_(std::forward<Args>(args)...) {}
  Writer& writer() { return writer_; }
  uint32_t intern_stack(std::span<const FrameText> frames) override { return writer_.intern_stack(frames); }
  void append(const Event& e) override { writer_.append(e); }
  void append_annotation(const Event& e, const KeyValues& kv) override { writer_.append_annotation(e, kv); }
  void flush() override { writer_.flush(); }
  void finish() override { writer_.finish(); }

 private:
  Writer writer_;
};

struct WriterKind {
  std::string name;
  bool streaming;  // chunks reach the file as they are written, not only at finish()
  std::function<std::unique_ptr<AnyWriter>(const std::string&, const proto::TraceHeader&, WriterOptions)> open;
};

void PrintTo(const WriterKind& kind, std::ostream* os) { *os << kind.name; }

std::unique_ptr<AnyWriter> open_trace_writer(const std::string& path, const proto::TraceHeader& header, WriterOptions o,
                                             bool atomic, bool background = false, uint32_t compression_threads = 0) {
  auto w = std::make_unique<Adapter<TraceWriter>>(path, TraceWriterOptions{.events_per_chunk = o.events_per_chunk,
                                                                           .zstd_level = o.zstd_level,
                                                                           .atomic = atomic,
                                                                           .background_encoding = background,
                                                                           .compression_threads = compression_threads});
  w->writer().begin(header);
  return w;
}

const std::vector<WriterKind>& writer_kinds() {
  static const std::vector<WriterKind> kinds = {
      {"TraceWriter", false,
       [](const std::string& p, const proto::TraceHeader& h, WriterOptions o) {
         return open_trace_writer(p, h, o, true);
       }},
      {"TraceWriterBackground", false,
       [](const std::string& p, const proto::TraceHeader& h, WriterOptions o) {
         return open_trace_writer(p, h, o, true, true);
       }},
      {"TraceWriterCompressionThreads", false,  // what `memreplay import` writes with
       [](const std::string& p, const proto::TraceHeader& h, WriterOptions o) {
         return open_trace_writer(p, h, o, true, true, 3);
       }},
      {"TraceWriterStreamingCompressionThreads", false,  // chunks reach the file a few chunks late
       [](const std::string& p, const proto::TraceHeader& h, WriterOptions o) {
         return open_trace_writer(p, h, o, false, false, 2);
       }},
      {"TraceWriterStreaming", true,
       [](const std::string& p, const proto::TraceHeader& h, WriterOptions o) {
         return open_trace_writer(p, h, o, false);
       }},
      {"LiveTraceWriter", true,
       [](const std::string& p, const proto::TraceHeader& h, WriterOptions o) -> std::unique_ptr<AnyWriter> {
         return std::make_unique<Adapter<LiveTraceWriter>>(p, header_fields(h), o.events_per_chunk, o.zstd_level);
       }},
  };
  return kinds;
}

// Writes the sample trace (its stacks interned first); finish or only flush.
void write_sample(AnyWriter& writer, const SampleTrace& t, bool finish = true) {
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

std::string deterministic(const google::protobuf::MessageLite& message) {
  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  message.SerializeToCodedStream(&coded);
  coded.Trim();
  return out;
}

// The payload of the record at offset in bytes (decompressed for a chunk).
std::string record_payload(const std::string& bytes, uint64_t offset) {
  const auto* head = reinterpret_cast<const unsigned char*>(bytes.data()) + offset;
  const std::string payload = bytes.substr(offset + format::kRecordHeaderBytes, format::get_u32(head + 4));
  if (format::get_u32(head) != static_cast<uint32_t>(format::RecordType::chunk)) return payload;
  std::string raw(ZSTD_getFrameContentSize(payload.data(), payload.size()), '\0');
  raw.resize(ZSTD_decompress(raw.data(), raw.size(), payload.data(), payload.size()));
  return raw;
}

class WriterContract : public ::testing::TestWithParam<WriterKind>, public testing::TempDir {
 protected:
  void SetUp() override { make_dir("memreplay_writer_contract_"); }
  void TearDown() override { remove_dir(); }
  std::unique_ptr<AnyWriter> open(const std::string& name, WriterOptions options = {},
                                  const proto::TraceHeader& header = testing::sample_header()) {
    return GetParam().open(path(name), header, options);
  }
};

TEST_P(WriterContract, EveryFieldOfEveryKindRoundTripsAcrossChunks) {
  const SampleTrace t = sample_trace(100);
  write_sample(*open("t.mrt", {.events_per_chunk = 7}), t);

  TraceReader reader(path("t.mrt"));
  EXPECT_TRUE(reader.complete());
  EXPECT_EQ(reader.truncation_note(), std::nullopt);
  proto::TraceHeader expected = testing::sample_header();
  expected.set_format_major(format::kFormatMajor);
  expected.set_format_minor(format::kFormatMinor);
  EXPECT_TRUE(MessageDifferencer::Equals(reader.header(), expected)) << reader.header().DebugString();

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
  EXPECT_EQ(testing::without_annotation_aux(all), t.events);
  EXPECT_EQ(annotations, t.annotations);
  for (size_t i = 0; i < t.stack_ids.size(); ++i) EXPECT_EQ(reader.stack_frames(t.stack_ids[i]), sample_stacks()[i]);
  EXPECT_TRUE(reader.stack_frames(0).empty());
  EXPECT_THROW(reader.stack_frames(99), std::out_of_range);

  const proto::Footer* footer = reader.footer();
  ASSERT_NE(footer, nullptr);
  EXPECT_EQ(footer->total_events(), 100u);
  EXPECT_EQ(footer->chunks_size(), 15);
  EXPECT_EQ(footer->stack_count(), sample_stacks().size());
  EXPECT_EQ(footer->frame_count(), 4u);
  EXPECT_EQ(footer->string_count(), 11u);  // 6 of the frames, 5 of the annotations
  ASSERT_EQ(footer->events_per_kind_size(), kEventKindCount - 1);
  for (uint32_t kind = 1; kind < kEventKindCount; ++kind)
    EXPECT_EQ(footer->events_per_kind().at(kind), std::count_if(t.events.begin(), t.events.end(), [&](const Event& e) {
                return static_cast<uint32_t>(e.kind) == kind;
              }));
  EXPECT_EQ(footer->min_time_ns(), 0u);
  EXPECT_EQ(footer->max_time_ns(), t.events[99].time_ns);
}

TEST_P(WriterContract, ValuesOfEveryMagnitudeRoundTrip) {
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
  auto writer = open("t.mrt", {.events_per_chunk = 3000});
  for (const Event& e : events) writer->append(e);
  writer->finish();
  EXPECT_EQ(TraceReader::read_all(path("t.mrt")), events);
}

// The hand-written encoding is protobuf's: each message parses with the generated classes and
// serializes back, deterministically, to the very bytes in the file.
TEST_P(WriterContract, RecordsHoldProtobufsOwnEncodingOfTheirMessages) {
  const SampleTrace t = sample_trace(60);
  write_sample(*open("t.mrt", {.events_per_chunk = 16}), t);
  const std::string bytes = read_bytes(path("t.mrt"));
  const TraceReader reader(path("t.mrt"));

  const std::string header = record_payload(bytes, format::kFileMagic.size());
  EXPECT_EQ(header, deterministic(reader.header()));
  const uint64_t footer_at =
      format::get_u64(reinterpret_cast<const unsigned char*>(bytes.data()) + bytes.size() - format::kTrailerBytes);
  EXPECT_EQ(record_payload(bytes, footer_at), deterministic(*reader.footer()));

  uint64_t first_event = 0;
  for (const proto::ChunkIndexEntry& entry : reader.footer()->chunks()) {
    SCOPED_TRACE("chunk at byte " + std::to_string(entry.offset()));
    const std::string raw = record_payload(bytes, entry.offset());
    proto::Chunk chunk;
    ASSERT_TRUE(chunk.ParseFromString(raw));
    EXPECT_EQ(chunk.SerializeAsString(), raw);
    EXPECT_EQ(chunk.first_event(), first_event);
    ASSERT_EQ(static_cast<uint64_t>(chunk.kind_size()), entry.event_count());
    // The columns, decoded by protobuf rather than by ChunkDecoder.
    uint64_t time = chunk.base_time_ns(), address = 0;
    for (int i = 0; i < chunk.kind_size(); ++i) {
      const Event& e = t.events[first_event + static_cast<uint64_t>(i)];
      time += static_cast<uint64_t>(chunk.time_delta(i));
      address += static_cast<uint64_t>(chunk.address_delta(i));
      EXPECT_EQ(chunk.kind(i), static_cast<uint32_t>(e.kind));
      EXPECT_EQ(time, e.time_ns);
      EXPECT_EQ(chunk.device(i), e.device);
      EXPECT_EQ(chunk.stream(i), e.stream);
      EXPECT_EQ(address, e.address);
      EXPECT_EQ(chunk.size(i), e.size);
      EXPECT_EQ(chunk.stack(i), e.stack);
      EXPECT_EQ(chunk.flags_size() ? chunk.flags(i) : 0u, e.flags);
      if (e.kind != EventKind::annotation) EXPECT_EQ(chunk.aux_size() ? chunk.aux(i) : 0u, e.aux);
    }
    first_event += entry.event_count();
  }
}

TEST_P(WriterContract, StringsThatAreNotUtf8AreRepairedNotFatal) {
  // Protobuf will not parse a string field that is not UTF-8, so no writer may write one.
  proto::TraceHeader header = testing::sample_header();
  header.set_command_line("python \xff.py");
  (*header.mutable_allocator_settings())["k\xc0"] = "v";
  header.set_producer("mine \xfe");
  auto writer = open("t.mrt", {}, header);
  const uint32_t stack = writer->intern_stack(std::vector<FrameText>{{"caf\xe9.py", 3, "f\xed\xa0\x80"}});
  writer->append_annotation(Event{.kind = EventKind::annotation, .stack = stack}, {{"name", "\xf5"}});
  writer->finish();

  TraceReader reader(path("t.mrt"));
  EXPECT_EQ(reader.header().command_line(), "python \uFFFD.py");
  EXPECT_EQ(reader.header().allocator_settings().count("k\uFFFD"), 1u);
  EXPECT_EQ(reader.header().producer(), "mine \uFFFD");
  std::vector<Event> batch;
  ASSERT_TRUE(reader.next_batch(batch));
  EXPECT_EQ(reader.annotation(batch[0]), (KeyValues{{"name", "\uFFFD"}}));
  EXPECT_EQ(reader.stack_frames(stack), (std::vector<FrameText>{{"caf\uFFFD.py", 3, "f\uFFFD\uFFFD\uFFFD"}}));
}

// A small finished trace (3 chunks) and where its records end.
struct SmallTrace {
  SampleTrace trace = sample_trace(12);
  std::string bytes;
  uint64_t first_chunk = 0;
  uint64_t footer = 0;
  std::vector<std::pair<uint64_t, size_t>> chunk_ends;  // (end offset, events up to there)
};

SmallTrace small_trace(const WriterKind& kind, const std::string& path) {
  SmallTrace s;
  write_sample(*kind.open(path, testing::sample_header(), {.events_per_chunk = 4}), s.trace);
  s.bytes = read_bytes(path);
  s.footer =
      format::get_u64(reinterpret_cast<const unsigned char*>(s.bytes.data()) + s.bytes.size() - format::kTrailerBytes);
  const TraceReader reader(path);
  const proto::Footer& footer = *reader.footer();
  s.first_chunk = footer.chunks(0).offset();
  for (int i = 0; i < footer.chunks_size(); ++i) {
    const uint64_t end = i + 1 < footer.chunks_size() ? footer.chunks(i + 1).offset() : s.footer;
    s.chunk_ends.emplace_back(end, footer.chunks(i).first_event() + footer.chunks(i).event_count());
  }
  return s;
}

// A reader's error: one line, naming the file and a byte offset in it.
void expect_clean_error(const InputError& e, const std::string& path) {
  const std::string what = e.what();
  EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  EXPECT_EQ(what.rfind(path + ": byte ", 0), 0u) << what;
}

TEST_P(WriterContract, TruncatedAtEveryByteReadsItsWholeChunks) {
  const SmallTrace s = small_trace(GetParam(), path("whole.mrt"));
  ASSERT_EQ(s.chunk_ends.size(), 3u);
  for (size_t cut = 0; cut < s.bytes.size(); ++cut) {
    SCOPED_TRACE("cut at byte " + std::to_string(cut));
    write_bytes(path("cut.mrt"), std::string_view(s.bytes).substr(0, cut));
    if (cut < s.first_chunk) {  // the header record is not whole: nothing is readable
      try {
        read_back(path("cut.mrt"));
        ADD_FAILURE() << "a file without a whole header was read";
      } catch (const InputError& e) {
        expect_clean_error(e, path("cut.mrt"));
      }
      continue;
    }
    size_t whole = 0;
    for (const auto& [end, events] : s.chunk_ends)
      if (end <= cut) whole = events;
    const ReadBack r = read_back(path("cut.mrt"));
    EXPECT_FALSE(r.complete);
    EXPECT_EQ(r.events.size(), whole);
    testing::expect_prefix(r, s.trace);
    const auto note = TraceReader(path("cut.mrt")).truncation_note();
    ASSERT_TRUE(note.has_value());
    EXPECT_EQ(note->find('\n'), std::string::npos) << *note;
  }
}

// Reads a damaged file fully (events, annotations, stacks): it must fail with a clean error or
// give only correct values.
void expect_clean_error_or_correct_values(const std::string& path, const SampleTrace& t) {
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
    testing::expect_prefix(ReadBack{testing::without_annotation_aux(all), annotations, reader.complete()}, t);
    if (reader.complete()) {
      EXPECT_EQ(all.size(), t.events.size());
    }
  } catch (const InputError& e) {
    expect_clean_error(e, path);
  }
}

TEST_P(WriterContract, FlippedBytesGiveACleanErrorOrCorrectValues) {
  const SmallTrace s = small_trace(GetParam(), path("whole.mrt"));
  std::vector<std::pair<std::string, std::string>> originals = {{"finished", s.bytes}};
  if (GetParam().streaming) {
    // What a streaming writer's file holds before finish(): the finished one without footer and
    // trailer.
    auto writer = GetParam().open(path("live.mrt"), testing::sample_header(), {.events_per_chunk = 4});
    write_sample(*writer, s.trace, false);
    originals.emplace_back("unfinished", read_bytes(path("live.mrt")));
    ASSERT_EQ(originals.back().second, s.bytes.substr(0, s.footer));
  }
  for (const auto& [what, original] : originals) {
    for (size_t at = 0; at < original.size(); ++at) {
      for (unsigned char mask : {0x01, 0xff}) {
        SCOPED_TRACE(what + ", byte " + std::to_string(at) + " ^ " + std::to_string(mask));
        std::string damaged = original;
        damaged[at] = static_cast<char>(damaged[at] ^ mask);
        write_bytes(path("flipped.mrt"), damaged);
        expect_clean_error_or_correct_values(path("flipped.mrt"), s.trace);
      }
    }
  }
}

TEST_P(WriterContract, StreamingWritersLeaveAReadablePrefix) {
  if (!GetParam().streaming) GTEST_SKIP() << "writes its file at finish() (AtomicWriterLeavesNothingWithoutFinish)";
  const SampleTrace t = sample_trace(25);
  {
    auto writer = open("live.mrt", {.events_per_chunk = 10});
    for (const auto& frames : sample_stacks()) writer->intern_stack(frames);
    size_t annotation = 0;
    for (const Event& e : t.events) {
      if (e.kind == EventKind::annotation)
        writer->append_annotation(e, t.annotations[annotation++]);
      else
        writer->append(e);
    }
    // Full chunks are in the file already; the last five events wait for flush().
    ReadBack r = read_back(path("live.mrt"));
    EXPECT_FALSE(r.complete);
    EXPECT_EQ(r.events.size(), 20u);
    testing::expect_prefix(r, t);

    writer->flush();
    r = read_back(path("live.mrt"));
    EXPECT_EQ(r.events.size(), 25u);
    testing::expect_prefix(r, t);
  }  // abandoned without finish()
  TraceReader reader(path("live.mrt"));
  EXPECT_FALSE(reader.complete());
  EXPECT_EQ(reader.footer(), nullptr);
  ASSERT_TRUE(reader.truncation_note().has_value());
  EXPECT_NE(reader.truncation_note()->find("without a footer"), std::string::npos) << *reader.truncation_note();
  EXPECT_EQ(testing::without_annotation_aux(TraceReader::read_all(path("live.mrt"))), t.events);
}

TEST_P(WriterContract, OptionsOutOfRangeAreRefusedTheSameWay) {
  const std::string writer = GetParam().name == "LiveTraceWriter" ? "LiveTraceWriter" : "TraceWriter";
  for (uint32_t events_per_chunk : {0u, kMaxEventsPerChunk + 1}) {
    try {
      open("t.mrt", {.events_per_chunk = events_per_chunk});
      ADD_FAILURE() << "events_per_chunk " << events_per_chunk << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()),
                writer + ": events_per_chunk must be 1 to 2097152, not " + std::to_string(events_per_chunk));
    }
  }
  EXPECT_THROW(open("t.mrt", {.zstd_level = ZSTD_maxCLevel() + 1}), std::invalid_argument);
  auto largest = open("t.mrt", {.events_per_chunk = kMaxEventsPerChunk});
  largest->append(Event{});
  largest->finish();
  EXPECT_EQ(TraceReader::read_all(path("t.mrt")).size(), 1u);
}

TEST_P(WriterContract, MisuseThrowsLogicErrorNamingTheCall) {
  auto writer = open("t.mrt");
  auto expect_misuse = [&](auto call, const std::string& message) {
    try {
      call();
      ADD_FAILURE() << "accepted: " << message;
    } catch (const std::logic_error& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  };
  expect_misuse([&] { writer->append(Event{.kind = static_cast<EventKind>(0)}); }, "::append(): invalid event kind 0");
  expect_misuse([&] { writer->append(Event{.kind = static_cast<EventKind>(kEventKindCount)}); },
                "invalid event kind 21");
  expect_misuse([&] { writer->append(Event{.stack = 1}); }, "::append(): stack id 1 was not interned");
  expect_misuse([&] { writer->append_annotation(Event{.kind = EventKind::alloc}, {}); },
                "::append_annotation(): an annotation with a alloc event");
  writer->append(Event{.time_ns = 5});  // the refused events left nothing behind
  writer->finish();
  writer->finish();  // idempotent
  expect_misuse([&] { writer->append(Event{}); }, "::append() after finish()");
  expect_misuse([&] { writer->flush(); }, "::flush() after finish()");
  EXPECT_EQ(TraceReader::read_all(path("t.mrt")), (std::vector<Event>{Event{.time_ns = 5}}));
}

TEST_P(WriterContract, ProducerIsMemreplaysVersionUnlessGiven) {
  proto::TraceHeader header = testing::sample_header();
  header.clear_producer();
  open("t.mrt", {}, header)->finish();
  EXPECT_EQ(TraceReader(path("t.mrt")).header().producer(), "memreplay " + std::string(kVersion));
}

TEST_P(WriterContract, EmptyTraceRoundTrips) {
  open("t.mrt")->finish();
  TraceReader reader(path("t.mrt"));
  EXPECT_TRUE(reader.complete());
  EXPECT_EQ(reader.footer()->total_events(), 0u);
  EXPECT_EQ(reader.footer()->chunks_size(), 0);
  std::vector<Event> batch;
  EXPECT_FALSE(reader.next_batch(batch));
}

TEST_P(WriterContract, UnwritablePathThrowsInputErrorNamingIt) {
  const std::string missing = path("no/such/dir/t.mrt");
  try {
    open("no/such/dir/t.mrt");
    FAIL() << "opened " << missing;
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(missing + ": cannot create: ", 0), 0u) << e.what();
  }
}

TEST_P(WriterContract, FullDiskThrowsInputErrorNamingThePath) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  if (GetParam().name.starts_with("TraceWriter") && !GetParam().streaming)
    GTEST_SKIP() << "writes a temporary file beside the path";
  try {
    GetParam().open("/dev/full", testing::sample_header(), {});  // the header is written at once
    FAIL() << "writing to /dev/full succeeded";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/dev/full: cannot write"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Writers, WriterContract, ::testing::ValuesIn(writer_kinds()),
                         [](const auto& info) { return info.param.name; });

// Not per writer: what holds between them and the schema.

class WriterContractAll : public ::testing::Test, public testing::TempDir {
 protected:
  void SetUp() override { make_dir("memreplay_writer_contract_"); }
  void TearDown() override { remove_dir(); }
};

// The fixture's header is built field by field (for ThreadSanitizer, sample_trace.h); it must be
// the header its text form describes. The parse itself is what crashes under TSan, so skip there.
TEST(SampleHeader, IsTheHeaderItsTextFormDescribes) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "protobuf's TextFormat map parse crashes under TSan (uninstrumented libprotobuf)";
#endif
  proto::TraceHeader parsed;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(std::string(testing::sample_header_text), &parsed));
  EXPECT_TRUE(MessageDifferencer::Equals(testing::sample_header(), parsed)) << testing::sample_header().DebugString();
  EXPECT_EQ(parsed.allocator_settings_size(), 2);
  EXPECT_EQ(parsed.pools_size(), 2);
}

TEST_F(WriterContractAll, EveryWriterWritesTheSameBytes) {
  const SampleTrace t = sample_trace(300);
  std::string first;
  for (const WriterKind& kind : writer_kinds()) {
    SCOPED_TRACE(kind.name);
    write_sample(*kind.open(path(kind.name + ".mrt"), testing::sample_header(), {.events_per_chunk = 50}), t);
    const std::string bytes = read_bytes(path(kind.name + ".mrt"));
    if (first.empty()) first = bytes;
    EXPECT_EQ(bytes, first);
  }
}

// What `memreplay import` writes with (compression on threads, several chunks in flight) against
// the caller's-thread compression, on a real trace of 453,173 events (7 chunks).
TEST_F(WriterContractAll, ARealImportIsTheSameBytesWithCompressionThreads) {
  const std::string snapshot = testing::real_data_path("traces/gpt2_generate.default.pickle.xz").string();
  for (const uint32_t threads : {0u, 1u, 3u}) {
    TraceWriter writer(path("t" + std::to_string(threads) + ".mrt"),
                       {.background_encoding = true, .compression_threads = threads});
    import_file(snapshot, writer);
  }
  const std::string inline_bytes = read_bytes(path("t0.mrt"));
  EXPECT_EQ(TraceReader(path("t0.mrt")).footer()->total_events(), 453173u);
  EXPECT_EQ(read_bytes(path("t1.mrt")), inline_bytes);
  EXPECT_EQ(read_bytes(path("t3.mrt")), inline_bytes);
}

TEST_F(WriterContractAll, CompressionThreadsOutOfRangeAreRefused) {
  EXPECT_THROW(TraceWriter(path("t.mrt"), {.compression_threads = kMaxCompressionThreads + 1}), std::invalid_argument);
  EXPECT_NO_THROW(TraceWriter(path("t.mrt"), {.compression_threads = kMaxCompressionThreads}));
}

}  // namespace
}  // namespace memreplay
