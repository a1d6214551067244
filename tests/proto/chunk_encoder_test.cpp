// ChunkEncoder (proto/chunk_encoder.h) against protobuf: the bytes it writes are those protobuf's
// serializer writes for the same Chunk, and the schema has no field the encoders do not know.
#include <gtest/gtest.h>

#include <tuple>
#include <vector>

#include "proto/chunk_encoder.h"
#include "proto/trace.pb.h"

namespace memreplay {
namespace {

// The encoders write every field of trace.proto; a field added there needs them (and
// TraceHeaderFields, and TraceWriter's copy of the header) to learn it first.
TEST(TraceSchema, HasNoFieldTheEncodersDoNotWrite) {
  EXPECT_EQ(proto::TraceHeader::descriptor()->field_count(), 13);
  EXPECT_EQ(proto::PoolInfo::descriptor()->field_count(), 5);
  EXPECT_EQ(proto::DeviceInfo::descriptor()->field_count(), 6);
  EXPECT_EQ(proto::Chunk::descriptor()->field_count(), 19);
  EXPECT_EQ(proto::Frame::descriptor()->field_count(), 3);
  EXPECT_EQ(proto::Stack::descriptor()->field_count(), 1);
  EXPECT_EQ(proto::Annotation::descriptor()->field_count(), 2);
  EXPECT_EQ(proto::ChunkIndexEntry::descriptor()->field_count(), 5);
  EXPECT_EQ(proto::Footer::descriptor()->field_count(), 8);
}

// ChunkEncoder alone against protobuf's serializer of the same Chunk, tables and annotations
// included, over two chunks (ids of the second continue from the first's).
TEST(ChunkEncoder, WritesWhatProtobufWritesForTheSameChunk) {
  format::ChunkEncoder encoder;
  const std::vector<FrameText> stack = {{"a.py", 1, "f"}, {"b.py", 0, "g"}};
  proto::Chunk expected;
  expected.set_first_stack_id(1);
  EXPECT_EQ(encoder.intern_stack(stack), 1u);
  for (const char* s : {"a.py", "f", "b.py", "g"}) expected.add_strings(s);
  for (const auto& [file, line, name] : {std::tuple{0u, 1u, 1u}, std::tuple{2u, 0u, 3u}}) {
    proto::Frame* f = expected.add_frames();
    f->set_filename(file);
    f->set_line(line);
    f->set_name(name);
  }
  expected.add_stacks()->add_frames(0);
  expected.mutable_stacks(0)->add_frames(1);
  encoder.add(Event{.kind = EventKind::alloc, .time_ns = 100, .address = 4096, .size = 512, .stack = 1});
  encoder.add_annotation(Event{.kind = EventKind::annotation, .time_ns = 90}, {{"f", "x"}});
  expected.add_strings("x");
  proto::Annotation* a = expected.add_annotations();
  a->add_keys(1);
  a->add_values(4);
  expected.set_base_time_ns(100);
  for (const auto& [kind, dt, da, size, stack_id] :
       {std::tuple{1u, int64_t{0}, int64_t{4096}, 512u, 1u}, std::tuple{11u, int64_t{-10}, int64_t{-4096}, 0u, 0u}}) {
    expected.add_kind(kind);
    expected.add_time_delta(dt);
    expected.add_device(0);
    expected.add_stream(0);
    expected.add_address_delta(da);
    expected.add_size(size);
    expected.add_stack(stack_id);
  }
  format::ChunkSummary summary;
  EXPECT_EQ(encoder.encode(summary), expected.SerializeAsString());
  EXPECT_EQ(summary.event_count, 2u);
  EXPECT_EQ(summary.min_time_ns, 90u);
  EXPECT_EQ(summary.max_time_ns, 100u);

  // The second chunk: flags and aux present, a stack of no frames, no new strings.
  EXPECT_EQ(encoder.intern_stack({}), 2u);
  encoder.add(
      Event{.kind = EventKind::oom, .device = 1, .time_ns = 7, .stream = 3, .size = 9, .flags = kFailed, .aux = 5});
  proto::Chunk second;
  second.set_first_event(2);
  second.set_base_time_ns(7);
  second.set_first_string_id(5);
  second.set_first_frame_id(2);
  second.set_first_stack_id(2);
  second.add_stacks();
  second.add_kind(static_cast<uint32_t>(EventKind::oom));
  second.add_time_delta(0);
  second.add_device(1);
  second.add_stream(3);
  second.add_address_delta(0);
  second.add_size(9);
  second.add_stack(0);
  second.add_flags(kFailed);
  second.add_aux(5);
  EXPECT_EQ(encoder.encode(summary), second.SerializeAsString());
  EXPECT_EQ(summary.first_event, 2u);
  EXPECT_FALSE(encoder.pending());

  // The third chunk: a pool column (field 19, after the tables), since one event is in a pool.
  encoder.add(Event{.kind = EventKind::alloc, .pool = 3, .time_ns = 8, .address = 64, .size = 1});
  encoder.add(Event{.kind = EventKind::free_completed, .time_ns = 9, .address = 64});
  proto::Chunk third;
  third.set_first_event(3);
  third.set_base_time_ns(8);
  third.set_first_string_id(5);
  third.set_first_frame_id(2);
  third.set_first_stack_id(3);
  for (const auto& [kind, dt, da, size, pool] :
       {std::tuple{1u, int64_t{0}, int64_t{64}, 1u, 3u}, std::tuple{3u, int64_t{1}, int64_t{0}, 0u, 0u}}) {
    third.add_kind(kind);
    third.add_time_delta(dt);
    third.add_device(0);
    third.add_stream(0);
    third.add_address_delta(da);
    third.add_size(size);
    third.add_stack(0);
    third.add_pool(pool);
  }
  EXPECT_EQ(encoder.encode(summary), third.SerializeAsString());
}

}  // namespace
}  // namespace memreplay
