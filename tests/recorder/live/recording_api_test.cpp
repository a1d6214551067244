// The C++ recording API (recorder/live/recording_api.h) and its C twin (recorder/live/memreplay_record.h).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "proto/trace_reader.h"
#include "recorder/live/memreplay_record.h"
#include "recorder/live/recording_api.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

namespace fs = std::filesystem;
namespace rec = memreplay::recording;

class RecordingApi : public testing::TempDirTest {
 protected:
  void TearDown() override {
    rec::stop();
    TempDirTest::TearDown();
  }
};

const void* ptr(uint64_t address) { return reinterpret_cast<const void*>(address); }

TEST_F(RecordingApi, WritesEveryCallAsItsEvent) {
  rec::Options options;
  options.source = "my-allocator";
  options.devices = {{0, "Fake GPU", 80ull << 30}};
  options.allocator_settings = {{"block_size", "512"}};
  ASSERT_TRUE(rec::start(path("t.mrt"), options));
  EXPECT_TRUE(rec::recording());
  rec::on_segment_alloc(ptr(0x10000), 1 << 20, 7);
  rec::on_stream_create(7);
  rec::on_alloc(ptr(0x10000), 1000, 7);
  rec::on_event_record(0xe1, 7);
  rec::on_stream_wait_event(8, 0xe1);
  rec::on_free(ptr(0x10000), 7);
  rec::annotate({{"phase", "end"}});
  rec::on_oom(1ull << 40, 7, 0, 12345);
  rec::on_synchronize();
  rec::on_segment_free(ptr(0x10000), 7);
  rec::on_empty_cache();
  rec::on_stream_destroy(7);
  rec::stop();
  EXPECT_FALSE(rec::recording());

  TraceReader reader(path("t.mrt"));
  EXPECT_TRUE(reader.complete());
  EXPECT_EQ(reader.header().source(), "my-allocator");
  ASSERT_EQ(reader.header().devices_size(), 1);
  EXPECT_EQ(reader.header().devices(0).name(), "Fake GPU");
  EXPECT_EQ(reader.header().allocator_settings().at("block_size"), "512");
  EXPECT_EQ(reader.header().pid(), static_cast<uint64_t>(getpid()));

  std::vector<Event> events, batch;
  while (reader.next_batch(batch)) events.insert(events.end(), batch.begin(), batch.end());
  const std::vector<EventKind> kinds = {
      EventKind::segment_alloc,  EventKind::stream_create,     EventKind::alloc,
      EventKind::event_record,   EventKind::stream_wait_event, EventKind::free_requested,
      EventKind::free_completed, EventKind::annotation,        EventKind::oom,
      EventKind::synchronize,    EventKind::segment_free,      EventKind::empty_cache,
      EventKind::stream_destroy};
  ASSERT_EQ(events.size(), kinds.size());
  for (size_t i = 0; i < kinds.size(); ++i) EXPECT_EQ(events[i].kind, kinds[i]) << i;
  EXPECT_EQ(events[2].size, 1000u);
  EXPECT_EQ(events[2].stream, 7u);
  EXPECT_EQ(events[3].aux, 0xe1u);
  EXPECT_EQ(events[5].size, 1000u);  // free sizes come from the allocation
  EXPECT_EQ(events[6].size, 1000u);
  EXPECT_EQ(events[8].size, 1ull << 40);
  EXPECT_EQ(events[8].aux, 12345u);
  EXPECT_EQ(events[10].size, 1u << 20);
}

TEST_F(RecordingApi, UnwritablePathSaysWhyAndTheProgramGoesOn) {
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(rec::start(path("missing/dir/t.mrt")));
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("cannot record to"), std::string::npos) << err;
  EXPECT_NE(err.find("missing/dir/t.mrt"), std::string::npos) << err;
  EXPECT_FALSE(rec::recording());
  rec::on_alloc(ptr(1), 1);  // a no-op, not a crash
  rec::on_free(ptr(1));
  EXPECT_FALSE(rec::flush());
}

TEST_F(RecordingApi, CallsWithoutARecordingAreNoOps) {
  rec::on_alloc(ptr(0x1000), 10);
  rec::on_free(ptr(0x1000));
  rec::annotate({{"a", "b"}});
  EXPECT_EQ(rec::stats().recorded, 0u);
}

TEST_F(RecordingApi, StartingAgainFinishesThePreviousTrace) {
  ASSERT_TRUE(rec::start(path("a.mrt")));
  rec::on_alloc(ptr(0x1000), 10);
  ASSERT_TRUE(rec::start(path("b.mrt")));
  rec::on_alloc(ptr(0x2000), 20);
  rec::stop();
  EXPECT_TRUE(TraceReader(path("a.mrt")).complete());
  ASSERT_EQ(TraceReader::read_all(path("a.mrt")).size(), 1u);
  ASSERT_EQ(TraceReader::read_all(path("b.mrt")).size(), 1u);
  EXPECT_EQ(TraceReader::read_all(path("b.mrt"))[0].size, 20u);
}

// The C API with a resolver that names each token's caller.
void resolve_tokens(void*, const uint64_t* tokens, size_t count, memreplay_emit_stack_fn emit, void* ctx) {
  for (size_t i = 0; i < count; ++i) {
    const std::string name = "caller" + std::to_string(tokens[i]);
    const memreplay_frame frame = {"lib.py", static_cast<uint32_t>(tokens[i]), name.c_str()};
    emit(ctx, i, &frame, 1);
  }
}

TEST_F(RecordingApi, CApiWritesHeaderEventsAndStacks) {
  const char* header[] = {"source",
                          "pytorch-live",
                          "setting:expandable_segments",
                          "False",
                          "device",
                          "0;150109880320;NVIDIA H200",
                          "starts_mid_run",
                          "1"};
  char error[256] = "";
  memreplay_recorder* r = memreplay_open(path("c.mrt").c_str(), header, 4, nullptr, error, sizeof error);
  ASSERT_NE(r, nullptr) << error;
  memreplay_set_resolver(r, resolve_tokens, nullptr, nullptr);
  EXPECT_EQ(memreplay_record(r, MEMREPLAY_SEGMENT_ALLOC, 0, 0, 0x1000, 2 << 20, MEMREPLAY_FLAG_PREEXISTING, 0, 0), 1);
  EXPECT_EQ(memreplay_record(r, MEMREPLAY_ALLOC, 0, 5, 0x1000, 100, 0, 0, 42), 1);
  const char* kv[] = {"phase", "step"};
  EXPECT_EQ(memreplay_annotate(r, 0, kv, 1), 1);
  EXPECT_EQ(memreplay_record(r, 999, 0, 0, 0, 0, 0, 0, 0), 0);  // not a kind
  EXPECT_EQ(memreplay_flush(r), 1);
  memreplay_stats stats{};
  EXPECT_EQ(memreplay_close(r, &stats), 1);
  EXPECT_EQ(stats.recorded, 3u);
  EXPECT_EQ(memreplay_record(r, MEMREPLAY_ALLOC, 0, 5, 0x2000, 100, 0, 0, 0), 0);  // closed: inert
  memreplay_destroy(r);

  TraceReader reader(path("c.mrt"));
  EXPECT_EQ(reader.header().source(), "pytorch-live");
  EXPECT_TRUE(reader.header().starts_mid_run());
  EXPECT_EQ(reader.header().allocator_settings().at("expandable_segments"), "False");
  ASSERT_EQ(reader.header().devices_size(), 1);
  EXPECT_EQ(reader.header().devices(0).total_memory(), 150109880320u);
  EXPECT_EQ(reader.header().devices(0).name(), "NVIDIA H200");
  std::vector<Event> batch;
  ASSERT_TRUE(reader.next_batch(batch));
  ASSERT_EQ(batch.size(), 3u);
  EXPECT_TRUE(batch[0].has_flag(kPreexisting));
  const auto frames = reader.stack_frames(batch[1].stack);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].name, "caller42");
  EXPECT_EQ(frames[0].line, 42u);
}

// "device_cap" records the run's per-process cap of a device in the header (DeviceInfo.cap_bytes),
// apart from its total memory; a device it names that no "device" key listed is added.
TEST_F(RecordingApi, CApiRecordsEachDevicesCapApartFromItsMemory) {
  const char* header[] = {"device",      "0;150109880320;NVIDIA H200", "device_cap", "0;867416960", "device_cap",
                          "1;1073741824"};
  char error[256] = "";
  memreplay_recorder* r = memreplay_open(path("cap.mrt").c_str(), header, 3, nullptr, error, sizeof error);
  ASSERT_NE(r, nullptr) << error;
  EXPECT_EQ(memreplay_record(r, MEMREPLAY_ALLOC, 0, 0, 0x1000, 100, 0, 0, 0), 1);
  EXPECT_EQ(memreplay_close(r, nullptr), 1);
  memreplay_destroy(r);

  TraceReader reader(path("cap.mrt"));
  EXPECT_EQ(reader.header().format_minor(), 3u);
  ASSERT_EQ(reader.header().devices_size(), 2);
  EXPECT_EQ(reader.header().devices(0).total_memory(), 150109880320u);
  EXPECT_EQ(reader.header().devices(0).cap_bytes(), 867416960u);
  EXPECT_EQ(reader.header().devices(1).index(), 1u);
  EXPECT_EQ(reader.header().devices(1).total_memory(), 0u);
  EXPECT_EQ(reader.header().devices(1).cap_bytes(), 1073741824u);
}

TEST_F(RecordingApi, CApiDestroyWithoutCloseFinishesTheFileWithStacks) {
  char error[256] = "";
  memreplay_recorder* r = memreplay_open(path("d.mrt").c_str(), nullptr, 0, nullptr, error, sizeof error);
  ASSERT_NE(r, nullptr) << error;
  memreplay_set_resolver(r, resolve_tokens, nullptr, nullptr);
  EXPECT_EQ(memreplay_record(r, MEMREPLAY_ALLOC, 0, 5, 0x1000, 100, 0, 0, 7), 1);
  memreplay_destroy(r);  // closes: the resolver must still be there for the last events

  TraceReader reader(path("d.mrt"));
  EXPECT_TRUE(reader.complete());
  std::vector<Event> batch;
  ASSERT_TRUE(reader.next_batch(batch));
  ASSERT_EQ(batch.size(), 1u);
  const auto frames = reader.stack_frames(batch[0].stack);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].name, "caller7");
}

TEST_F(RecordingApi, CApiReportsAnUnwritablePath) {
  char error[256] = "";
  EXPECT_EQ(memreplay_open(path("no/dir/c.mrt").c_str(), nullptr, 0, nullptr, error, sizeof error), nullptr);
  EXPECT_NE(std::string(error).find("no/dir/c.mrt"), std::string::npos) << error;
}

}  // namespace
}  // namespace memreplay
