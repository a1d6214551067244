// LiveRecorder: order across threads, bounded memory, stacks, and what survives SIGKILL, a full
// disk, exit() and fatal signals (the crash cases run in a fork()ed child).
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "proto/input_error.h"
#include "proto/trace_reader.h"
#include "proto/trace_writer.h"
#include "recorder/live/exit_flush.h"
#include "recorder/live/live_recorder.h"
#include "recorder/live/live_trace_writer.h"
#include "recorder/live/tick_clock.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

class LiveRecorderTest : public testing::TempDirTest {};

LiveTraceHeader header() {
  LiveTraceHeader h;
  h.source = "api";
  return h;
}

Event alloc_event(uint64_t i) {
  Event e;
  e.kind = EventKind::alloc;
  e.address = 0x10000 + i * 512;
  e.size = i;
  e.time_ns = 1'000'000 + i;
  return e;
}

// Runs `child` in a fork()ed process; returns its wait status.
template <typename F>
int in_child(F child) {
  const pid_t pid = fork();
  if (pid == 0) {
    child();
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

TEST_F(LiveRecorderTest, RoundTripsEventsInOrder) {
  {
    LiveRecorderOptions options;
    options.thread_buffer_events = 1u << 16;  // room for all: nothing may be dropped
    LiveRecorder recorder(path("t.mrt"), header(), options);
    for (uint64_t i = 0; i < 50'000; ++i) ASSERT_TRUE(recorder.record(alloc_event(i)));
    recorder.close();
    EXPECT_EQ(recorder.stats().recorded, 50'000u);
    EXPECT_EQ(recorder.stats().written, 50'000u);
    EXPECT_EQ(recorder.stats().dropped, 0u);
  }
  TraceReader reader(path("t.mrt"));
  EXPECT_TRUE(reader.complete());
  EXPECT_EQ(reader.header().source(), "api");
  const auto events = TraceReader::read_all(path("t.mrt"));
  ASSERT_EQ(events.size(), 50'000u);
  for (uint64_t i = 0; i < events.size(); ++i) ASSERT_EQ(events[i], alloc_event(i)) << i;
}

TEST_F(LiveRecorderTest, KeepsCauseBeforeEffectAcrossThreads) {
  // Each event is recorded under a lock that also numbers it: the trace must show the numbers in
  // order, however the threads interleave.
  constexpr int kThreads = 4, kPerThread = 20'000;
  std::mutex lock;
  uint64_t counter = 0;
  {
    LiveRecorderOptions options;
    options.thread_buffer_events = 1u << 16;
    LiveRecorder recorder(path("t.mrt"), header(), options);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        for (uint64_t i = 0; i < kPerThread; ++i) {
          std::lock_guard guard(lock);
          Event e = alloc_event(++counter);
          e.stream = static_cast<uint64_t>(t);
          EXPECT_TRUE(recorder.record(e));
        }
      });
    for (auto& t : threads) t.join();
    recorder.close();
    EXPECT_EQ(recorder.stats().threads, static_cast<uint64_t>(kThreads));
  }
  const auto events = TraceReader::read_all(path("t.mrt"));
  ASSERT_EQ(events.size(), static_cast<size_t>(kThreads * kPerThread));
  for (size_t i = 0; i < events.size(); ++i) ASSERT_EQ(events[i].size, i + 1) << "event " << i;
  for (size_t i = 1; i < events.size(); ++i) ASSERT_GE(events[i].time_ns, events[i - 1].time_ns);
}

TEST_F(LiveRecorderTest, DropsAndCountsInsteadOfBlockingWhenABufferIsFull) {
  LiveRecorderOptions options;
  options.thread_buffer_events = 64;
  options.drain_interval = milliseconds(2000);  // the writer looks rarely...
  LiveRecorder recorder(path("t.mrt"), header(), options);
  uint64_t kept = 0;
  for (uint64_t i = 0; i < 10'000; ++i) kept += recorder.record(alloc_event(i)) ? 1 : 0;
  // ...though a half-full ring wakes it early, the producer outruns it: some are dropped.
  recorder.close();
  const LiveRecorderStats stats = recorder.stats();
  EXPECT_EQ(stats.recorded, kept);
  EXPECT_EQ(stats.recorded + stats.dropped, 10'000u);
  EXPECT_GT(stats.dropped, 0u);

  TraceReader reader(path("t.mrt"));
  std::vector<Event> batch;
  uint64_t events = 0;
  std::string dropped_note;
  while (reader.next_batch(batch))
    for (const Event& e : batch) {
      if (e.kind == EventKind::annotation) {
        for (const auto& [k, v] : reader.annotation(e))
          if (k == "memreplay.dropped_events") dropped_note = v;
      } else {
        ++events;
      }
    }
  EXPECT_EQ(events, kept);
  EXPECT_EQ(dropped_note, std::to_string(stats.dropped));
}

TEST_F(LiveRecorderTest, FlushMakesEverythingRecordedSoFarReadable) {
  LiveRecorderOptions options;
  options.flush_interval = milliseconds(60'000);
  LiveRecorder recorder(path("t.mrt"), header(), options);
  for (uint64_t i = 0; i < 1234; ++i) recorder.record(alloc_event(i));
  ASSERT_TRUE(recorder.flush());
  TraceReader reader(path("t.mrt"));
  EXPECT_FALSE(reader.complete());
  EXPECT_EQ(TraceReader::read_all(path("t.mrt")).size(), 1234u);
  recorder.close();
  EXPECT_TRUE(TraceReader(path("t.mrt")).complete());
}

TEST_F(LiveRecorderTest, UnwritablePathThrowsInputError) {
  EXPECT_THROW(LiveRecorder(path("no/such/dir/t.mrt"), header()), InputError);
}

TEST_F(LiveRecorderTest, SigkillLeavesEveryWholeChunkReadable) {
  // The child records small chunks with periodic flushes and tells us how many events were
  // flushed for sure; we SIGKILL it mid-stream and read what it left.
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  const std::string trace = path("killed.mrt");
  const pid_t pid = fork();
  if (pid == 0) {
    close(pipe_fds[0]);
    LiveRecorderOptions options;
    options.events_per_chunk = 100;
    options.flush_interval = milliseconds(10);
    auto* recorder = new LiveRecorder(trace, header(), options);
    for (uint64_t i = 0;; ++i) {
      while (!recorder->record(alloc_event(i))) std::this_thread::yield();
      if (i % 1000 == 999) {
        recorder->flush();
        const uint64_t durable = i + 1;
        if (write(pipe_fds[1], &durable, sizeof durable) != sizeof durable) _exit(1);
      }
    }
  }
  close(pipe_fds[1]);
  uint64_t durable = 0;
  while (durable < 20'000) ASSERT_EQ(read(pipe_fds[0], &durable, sizeof durable), static_cast<ssize_t>(sizeof durable));
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  int status = 0;
  waitpid(pid, &status, 0);
  close(pipe_fds[0]);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

  TraceReader reader(trace);
  EXPECT_FALSE(reader.complete());
  const auto events = TraceReader::read_all(trace);
  // Everything flushed before the kill is there, in order, and nothing else but a prefix.
  ASSERT_GE(events.size(), durable);
  for (uint64_t i = 0; i < events.size(); ++i) ASSERT_EQ(events[i], alloc_event(i)) << "event " << i;
}

TEST_F(LiveRecorderTest, FullDiskStopsRecordingButNotTheProgram) {
  // RLIMIT_FSIZE makes writes past 64 KiB fail as on a full disk.
  const std::string trace = path("full.mrt");
  const int status = in_child([&] {
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit limit = {64 << 10, 64 << 10};
    setrlimit(RLIMIT_FSIZE, &limit);
    LiveRecorderOptions options;
    options.events_per_chunk = 500;
    LiveRecorder recorder(trace, header(), options);
    std::mt19937_64 rng(1);
    for (uint64_t i = 0; i < 200'000; ++i) {
      Event e = alloc_event(i);
      e.address = rng();  // incompressible, so the limit is reached quickly
      recorder.record(e);
      if (i % 1000 == 0) recorder.flush();
    }
    recorder.close();
    _exit(recorder.stats().failed && !recorder.error().empty() ? 42 : 1);
  });
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 42);  // the program ran to its end, the recorder knew it failed
  const auto events = TraceReader::read_all(trace);
  EXPECT_GT(events.size(), 0u);
  for (uint64_t i = 0; i < events.size(); ++i) ASSERT_EQ(events[i].size, i);
}

TEST_F(LiveRecorderTest, ExitFinishesTheFile) {
  const std::string trace = path("exit.mrt");
  const int status = in_child([&] {
    LiveRecorderOptions options;
    options.flush_interval = milliseconds(60'000);
    auto* recorder = new LiveRecorder(trace, header(), options);  // never closed by hand
    for (uint64_t i = 0; i < 777; ++i) recorder->record(alloc_event(i));
    std::exit(0);
  });
  ASSERT_TRUE(WIFEXITED(status));
  TraceReader reader(trace);
  EXPECT_TRUE(reader.complete());
  EXPECT_EQ(TraceReader::read_all(trace).size(), 777u);
}

TEST_F(LiveRecorderTest, FatalSignalFlushesBeforeDying) {
  const std::string trace = path("signal.mrt");
  const int status = in_child([&] {
    LiveRecorderOptions options;
    options.flush_interval = milliseconds(60'000);
    auto* recorder = new LiveRecorder(trace, header(), options);
    for (uint64_t i = 0; i < 555; ++i) recorder->record(alloc_event(i));
    raise(SIGTERM);
    _exit(3);  // not reached
  });
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  EXPECT_EQ(TraceReader::read_all(trace).size(), 555u);
}

TEST_F(LiveRecorderTest, ForkedChildDoesNotTouchTheParentsTrace) {
  LiveRecorder recorder(path("t.mrt"), header());
  for (uint64_t i = 0; i < 100; ++i) recorder.record(alloc_event(i));
  const int status = in_child([&] {
    const bool recorded = recorder.record(alloc_event(9999));
    // The recorder's exit hook, as exit() runs it: it must leave the file alone. Not exit()
    // itself: a child forked from a threaded process may only make async-signal-safe calls, and
    // exit() also runs every other library's handlers, any of which may wait on a lock that
    // another thread of the parent held at the fork (the test hung that way, now and then).
    detail::flush_watched_at_exit();
    _exit(recorded ? 1 : 0);
  });
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  for (uint64_t i = 100; i < 200; ++i) recorder.record(alloc_event(i));
  recorder.close();
  const auto events = TraceReader::read_all(path("t.mrt"));
  ASSERT_EQ(events.size(), 200u);
  for (uint64_t i = 0; i < events.size(); ++i) ASSERT_EQ(events[i], alloc_event(i));
}

TEST_F(LiveRecorderTest, FillsFreeSizesFromTheirAllocations) {
  LiveRecorderOptions options;
  options.fill_free_sizes = true;
  {
    LiveRecorder recorder(path("t.mrt"), header(), options);
    Event e;
    e.kind = EventKind::segment_alloc, e.address = 0x1000, e.size = 4096;
    recorder.record(e);
    e.kind = EventKind::physical_alloc, e.address = 0, e.size = 2 << 20, e.aux = 77;
    recorder.record(e);
    e.kind = EventKind::segment_free, e.address = 0x1000, e.size = 0, e.aux = 0;
    recorder.record(e);
    e.kind = EventKind::physical_free, e.address = 0, e.size = 0, e.aux = 77;
    recorder.record(e);
    e.kind = EventKind::segment_free, e.address = 0x9999, e.size = 0, e.aux = 0;  // unknown: stays 0
    recorder.record(e);
  }
  const auto events = TraceReader::read_all(path("t.mrt"));
  ASSERT_EQ(events.size(), 5u);
  EXPECT_EQ(events[2].size, 4096u);
  EXPECT_EQ(events[3].size, 2u << 20);
  EXPECT_EQ(events[4].size, 0u);
}

// record() may stamp raw CPU ticks (tick_clock.h); the file must still hold now_ns() time, each
// stamp within the call that made it, whichever clock this machine gets.
TEST_F(LiveRecorderTest, StampsEventsWithoutATimeOnTheRecordersClock) {
  LiveRecorderOptions options;
  options.drain_interval = milliseconds(40);  // long brackets: a conversion that only clamped would show
  std::vector<std::pair<uint64_t, uint64_t>> calls;  // now_ns() before and after each record()
  {
    LiveRecorder recorder(path("t.mrt"), header(), options);
    for (uint64_t i = 0; i < 200; ++i) {
      Event e = alloc_event(i);
      e.time_ns = 0;
      const uint64_t before = LiveRecorder::now_ns();
      ASSERT_TRUE(recorder.record(e));
      calls.emplace_back(before, LiveRecorder::now_ns());
      std::this_thread::sleep_for(std::chrono::microseconds(i % 10 == 0 ? 3000 : 300));
    }
  }
  const auto events = TraceReader::read_all(path("t.mrt"));
  ASSERT_EQ(events.size(), calls.size());
  constexpr uint64_t kSlack = 200'000;  // ns: pairing ticks with ns is exact to well under this
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_GE(events[i].time_ns + kSlack, calls[i].first) << i;
    EXPECT_LE(events[i].time_ns, calls[i].second + kSlack) << i;
    if (i > 0) EXPECT_GE(events[i].time_ns, events[i - 1].time_ns) << i;
  }
}

TEST(TickConverterTest, InterpolatesBetweenReadingsAndClampsOutside) {
  detail::TickConverter c;
  c.advance({1'000, 5'000'000});
  c.advance({3'000, 5'001'000});  // 0.5 ns per tick
  EXPECT_EQ(c.to_ns(2'000), 5'000'500u);
  EXPECT_EQ(c.to_ns(1'000), 5'000'000u);
  EXPECT_EQ(c.to_ns(999), 5'000'000u);  // stamped before the bracket: its start
  EXPECT_EQ(c.to_ns(9'000), 5'001'000u);  // a core ahead of the writer's: the bracket's end
  c.advance({2'500, 5'002'000});  // a reading that goes back (another core): ignored
  EXPECT_EQ(c.to_ns(2'000), 5'000'500u);
  c.advance({7'000, 5'003'000});  // 0.5 ns per tick again, from the last reading
  EXPECT_EQ(c.to_ns(5'000), 5'002'000u);
}

// Token t stands for the stack [f<t>, main] on every thread; counts what it was asked.
class FakeResolver : public ContextResolver {
 public:
  explicit FakeResolver(bool stable) : stable_(stable) {}
  void resolve(std::span<const Context> contexts, std::vector<std::vector<FrameText>>& frames) override {
    frames.clear();
    for (const Context& c : contexts) {
      ++asked;
      frames.push_back(
          {{"lib.cc", static_cast<uint32_t>(c.token), "f" + std::to_string(c.token)}, {"main.cc", 1, "main"}});
    }
  }
  bool stable_tokens() const override { return stable_; }
  int asked = 0;

 private:
  bool stable_;
};

TEST_F(LiveRecorderTest, ResolvesContextTokensIntoStacks) {
  for (bool stable : {true, false}) {
    const std::string trace = path(stable ? "stable.mrt" : "unstable.mrt");
    FakeResolver resolver(stable);
    {
      LiveRecorder recorder(trace, header());
      recorder.set_context_resolver(&resolver);
      for (uint64_t i = 0; i < 300; ++i) recorder.record(alloc_event(i), 1 + i % 3);
      recorder.record(alloc_event(300));  // no context: no stack
    }
    EXPECT_EQ(resolver.asked, stable ? 3 : 300) << "stable " << stable;
    TraceReader reader(trace);
    std::vector<Event> events, batch;
    while (reader.next_batch(batch)) events.insert(events.end(), batch.begin(), batch.end());
    ASSERT_EQ(events.size(), 301u);
    for (uint64_t i = 0; i < 300; ++i) {
      const auto frames = reader.stack_frames(events[i].stack);
      ASSERT_EQ(frames.size(), 2u);
      EXPECT_EQ(frames[0].name, "f" + std::to_string(1 + i % 3));
      EXPECT_EQ(frames[1].name, "main");
    }
    EXPECT_EQ(events[300].stack, 0u);
  }
}

TEST_F(LiveRecorderTest, AnnotationsKeepTheirMetadata) {
  {
    LiveRecorder recorder(path("t.mrt"), header());
    recorder.record(alloc_event(0));
    recorder.annotate(0, {{"phase", "forward"}, {"step", "3"}});
    recorder.record(alloc_event(1));
  }
  TraceReader reader(path("t.mrt"));
  std::vector<Event> batch;
  ASSERT_TRUE(reader.next_batch(batch));
  ASSERT_EQ(batch.size(), 3u);
  EXPECT_EQ(batch[1].kind, EventKind::annotation);
  EXPECT_EQ(reader.annotation(batch[1]), (KeyValues{{"phase", "forward"}, {"step", "3"}}));
}

TEST_F(LiveRecorderTest, ThreadsThatExitGiveTheirBufferBack) {
  LiveRecorder recorder(path("t.mrt"), header());
  for (int round = 0; round < 20; ++round) {
    std::thread([&] {
      for (uint64_t i = 0; i < 100; ++i) recorder.record(alloc_event(i));
    }).join();
  }
  ASSERT_TRUE(recorder.flush());
  recorder.close();
  EXPECT_EQ(recorder.stats().threads, 20u);
  EXPECT_EQ(recorder.stats().recorded, 2000u);
  EXPECT_EQ(TraceReader::read_all(path("t.mrt")).size(), 2000u);
}

// The live writer (no temp file, every chunk written as it fills) and the offline writer share
// one encoder (proto/trace_encoder.h): what the live one writes must read back exactly as what
// TraceWriter writes from the same input.
TEST_F(LiveRecorderTest, LiveTraceWriterWritesWhatTraceWriterWrites) {
  LiveTraceHeader live_header;
  live_header.source = "pytorch-live";
  live_header.command_line = "python train.py \xff";  // not UTF-8: both writers must repair it
  live_header.capture_time_ns = 1'722'000'000'000'000'000ull;
  live_header.pid = 4242;
  live_header.devices = {{0, "NVIDIA H200", 150'109'880'320ull, 867'416'960ull}, {1, "", 0}};
  live_header.allocator_settings = {{"expandable_segments", "False"}, {"max_split_size", "-1"}};
  live_header.starts_mid_run = true;
  proto::TraceHeader header;
  header.set_source(live_header.source);
  header.set_command_line(live_header.command_line);
  header.set_capture_time_ns(live_header.capture_time_ns);
  header.set_pid(live_header.pid);
  for (const auto& d : live_header.devices) {
    proto::DeviceInfo* info = header.add_devices();
    info->set_index(d.index);
    info->set_name(d.name);
    info->set_total_memory(d.total_memory);
    info->set_cap_bytes(d.cap_bytes);
  }
  for (const auto& [k, v] : live_header.allocator_settings) (*header.mutable_allocator_settings())[k] = v;
  header.set_starts_mid_run(true);

  TraceWriterOptions options;
  options.events_per_chunk = 97;
  TraceWriter reference(path("reference.mrt"), options);
  reference.begin(header);
  LiveTraceWriter live(path("live.mrt"), live_header, 97, 3);
  std::mt19937_64 rng(7);
  for (uint64_t i = 0; i < 1000; ++i) {
    Event e;
    e.kind = static_cast<EventKind>(1 + rng() % (kEventKindCount - 1));
    e.device = static_cast<uint32_t>(rng() % 2);
    e.time_ns = 1'722'000'000'000'000'000ull + i * 1000 - rng() % 5000;  // not always increasing
    e.stream = rng() % 3 == 0 ? 0 : rng();
    e.address = rng() % 2 ? rng() : 0x7f0000000000ull + (rng() % 1000) * 512;
    e.size = rng() % 4 ? rng() % (1ull << 32) : rng();
    e.flags = rng() % 10 == 0 ? static_cast<uint32_t>(rng() % 8) : 0;
    if (e.kind == EventKind::annotation) {
      const KeyValues kv = {{"phase", "step " + std::to_string(i % 7)}, {"k\xc3", "v"}};
      reference.append_annotation(e, kv);
      live.append_annotation(e, kv);
      continue;
    }
    e.aux = rng() % 3 == 0 ? rng() : 0;
    if (rng() % 3 == 0) {
      const std::vector<FrameText> frames = {{"train.py", static_cast<uint32_t>(rng() % 50), "step"},
                                             {"model.py", static_cast<uint32_t>(rng() % 5), "forward"}};
      e.stack = reference.intern_stack(frames);
      EXPECT_EQ(live.intern_stack(frames), e.stack);
    }
    reference.append(e);
    live.append(e);
    if (i % 333 == 0) {
      reference.flush();
      live.flush();
    }
  }
  reference.finish();
  live.finish();

  TraceReader a(path("reference.mrt")), b(path("live.mrt"));
  ASSERT_TRUE(b.complete());
  using google::protobuf::util::MessageDifferencer;
  EXPECT_TRUE(MessageDifferencer::Equals(a.header(), b.header())) << b.header().DebugString();
  // Equal but for where the chunks are: compressed sizes may differ.
  proto::Footer footer_a = *a.footer(), footer_b = *b.footer();
  for (auto* footer : {&footer_a, &footer_b})
    for (auto& chunk : *footer->mutable_chunks()) chunk.clear_offset();
  EXPECT_TRUE(MessageDifferencer::Equals(footer_a, footer_b)) << footer_b.DebugString();
  std::vector<Event> batch_a, batch_b;
  while (a.next_batch(batch_a)) {
    ASSERT_TRUE(b.next_batch(batch_b));
    ASSERT_EQ(batch_a, batch_b);
    for (const Event& e : batch_a) {
      EXPECT_EQ(a.stack_frames(e.stack), b.stack_frames(e.stack));
      if (e.kind == EventKind::annotation) EXPECT_EQ(a.annotation(e), b.annotation(e));
    }
  }
  EXPECT_FALSE(b.next_batch(batch_b));
}

}  // namespace
}  // namespace memreplay
