// The replay engine on small hand-made traces: what it replays, what it measures, and how it
// treats events inconsistent with the live state.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "base/units.h"
#include "policies/registry.h"
#include "proto/input_error.h"
#include "replayer/fragmentation.h"
#include "replayer/replay_session.h"
#include "replayer/sim/sim_device.h"
#include "replayer/timeline.h"

namespace memreplay {
namespace {

Event alloc(uint64_t address, uint64_t size, uint64_t stream = 0) {
  return Event{.kind = EventKind::alloc, .stream = stream, .address = address, .size = size};
}
Event free_completed(uint64_t address) { return Event{.kind = EventKind::free_completed, .address = address}; }
Event free_requested(uint64_t address) { return Event{.kind = EventKind::free_requested, .address = address}; }

struct Replay {
  explicit Replay(std::string spec, std::optional<uint64_t> capacity = {}, ReplayOptions options = {})
      : device(SimDevice::Options{.capacity = capacity}),
        policy(PolicyRegistry::instance().create(spec, device)),
        session(*policy, device, options) {}
  ReplayMetrics run(const std::vector<Event>& events) {
    session.feed_batch(events, 0);
    return session.finish();
  }
  SimDevice device;
  std::unique_ptr<Policy> policy;
  ReplaySession session;
};

TEST(Engine, MeasuresPeaksOfRequestedAllocatedAndReserved) {
  // GIVEN two live small blocks of 1000 and 3000 bytes, one freed, then a 100-byte one
  Replay r("pytorch");
  const auto m = r.run({alloc(0x1000, 1000), alloc(0x2000, 3000), free_completed(0x1000), alloc(0x3000, 100)});
  // THEN requested peaks at 4000, allocated at the rounded 1024 + 3072, reserved at one 2 MiB segment
  EXPECT_EQ(m.events, 4u);
  EXPECT_EQ(m.requested_peak, 4000u);
  EXPECT_EQ(m.allocated_peak, 1024u + 3072u);
  EXPECT_EQ(m.reserved_peak, 2 * kMiB);
  EXPECT_EQ(m.device_alloc_calls, 1u);
  // AND "at the peak" is the peak's most-used moment (after the second alloc), not its first one
  EXPECT_EQ(m.peak_replay_event, std::optional<uint64_t>(1));
  EXPECT_DOUBLE_EQ(m.fragmentation_at_peak, 1.0 - double(1024 + 3072) / double(2 * kMiB));
  EXPECT_EQ(m.total_free_at_peak, 2 * kMiB - 1024 - 3072);
  EXPECT_EQ(m.largest_free_at_peak, 2 * kMiB - 1024 - 3072);
  // AND the other end: the least-used moment (after the first alloc)
  EXPECT_DOUBLE_EQ(m.fragmentation_at_peak_max, 1.0 - double(1024) / double(2 * kMiB));
}

TEST(Engine, BlockStaysLiveUntilFreeCompleted) {
  // A record_stream'ed block: free_requested early, free_completed only after the next alloc.
  Replay r("pytorch");
  const auto m = r.run({alloc(0x1000, 1000), free_requested(0x1000), alloc(0x2000, 1000), free_completed(0x1000)});
  EXPECT_EQ(m.requested_peak, 2000u);  // both live at once
  EXPECT_EQ(m.events, 3u);  // free_requested is not replayed
}

TEST(Engine, EmptyCacheReleasesCachedSegments) {
  Replay r("pytorch");
  r.run({alloc(0x1000, 30 * kMiB), free_completed(0x1000), Event{.kind = EventKind::empty_cache},
         alloc(0x2000, 30 * kMiB)});
  EXPECT_EQ(r.device.counters().malloc_calls, 2u);
  EXPECT_EQ(r.device.counters().free_calls, 1u);
}

TEST(Engine, FreeOfUnknownAddressNamesTheEvent) {
  Replay strict("pytorch", {}, ReplayOptions{.trace_path = "t.mrt"});
  try {
    strict.run({alloc(0x1000, 10), free_completed(0x9999)});
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("t.mrt: event 1: free_completed of 0x9999"), std::string::npos) << e.what();
  }
}

TEST(Engine, AllocOverLiveBlockIsAnError) {
  Replay strict("pytorch");
  EXPECT_THROW(strict.run({alloc(0x1000, 10), alloc(0x1000, 20)}), InputError);
}

TEST(Engine, LenientCountsAndSkips) {
  Replay lenient("pytorch", {}, ReplayOptions{.lenient = true});
  const auto m = lenient.run({alloc(0x1000, 10), alloc(0x1000, 20), free_completed(0x9999), free_completed(0x1000)});
  EXPECT_EQ(m.skipped_events, 2u);
  EXPECT_EQ(m.requested_peak, 10u);
}

// A policy that hands out one 4 KiB block per request and records the stream of every free; it
// refuses the frees of addresses listed in `refuse` (a broken policy, as far as the engine knows).
class RecordingPolicy final : public Policy {
 public:
  std::vector<StreamId> free_streams;
  std::vector<uint64_t> refuse;

 private:
  std::optional<Block> do_allocate(uint64_t, StreamId) override { return Block{next_ += 4096, 4096}; }
  bool do_free(uint64_t address, StreamId stream) override {
    free_streams.push_back(stream);
    return std::find(refuse.begin(), refuse.end(), address) == refuse.end();
  }
  uint64_t next_ = 0;
};

TEST(Engine, FreePassesTheStreamOfTheFreeEvent) {
  SimDevice device(SimDevice::Options{});
  RecordingPolicy policy;
  ReplaySession session(policy, device, ReplayOptions{});
  Event free_on_7 = free_completed(0x1000);
  free_on_7.stream = 7;
  session.feed_batch(std::vector<Event>{alloc(0x1000, 10, 3), free_on_7}, 0);
  EXPECT_EQ(policy.free_streams, std::vector<StreamId>{7});
}

// A free the policy refuses is the policy's fault, never the trace's: it stops the replay at that
// event naming the policy, with --lenient too (which skips the trace's inconsistencies only).
TEST(Engine, AFreeThePolicyRefusesStopsTheReplayNamingThePolicyAndTheEventLenientOrNot) {
  for (const bool lenient : {false, true}) {
    SimDevice device(SimDevice::Options{});
    RecordingPolicy policy;
    policy.refuse = {4096};  // the first block
    ReplaySession session(policy, device,
                          ReplayOptions{.trace_path = "t.mrt", .policy_spec = "recording", .lenient = lenient});
    try {
      session.feed_batch(std::vector<Event>{alloc(0x1000, 10), alloc(0x2000, 10), free_completed(0x1000)}, 40);
      ADD_FAILURE() << "expected InputError, lenient " << lenient;
    } catch (const InputError& e) {
      const std::string message = e.what();
      EXPECT_EQ(message,
                "t.mrt: event 42: policy 'recording' broke its contract: free of 0x1000, which this policy did not "
                "hand out (or took back already)")
          << message;
    }
    EXPECT_EQ(session.finish().skipped_events, 0u);
  }
}

// What --lenient skips is counted, and the first is named (for the warning on stderr).
TEST(Engine, LenientCountsTheSkippedEventsAndNamesTheFirst) {
  Replay lenient("pytorch", {}, ReplayOptions{.lenient = true});
  const auto m = lenient.run({alloc(0x1000, 10), free_completed(0x9999), free_completed(0x8888)});
  EXPECT_EQ(m.skipped_events, 2u);
  EXPECT_EQ(m.first_skipped, "event 1: free_completed of 0x9999, which is not a live block");
  EXPECT_EQ(skipped_warning("t.mrt", m),
            "t.mrt: --lenient skipped 2 events inconsistent with the live state (the first: event 1: "
            "free_completed of 0x9999, which is not a live block); the numbers leave them out");
}

TEST(Engine, PolicyStatsAreReadTyped) {
  // An OOM under a 50 MiB cap: the pytorch policy retries once; the JSON keeps PyTorch's names.
  Replay r("pytorch", 50 * kMiB, ReplayOptions{.continue_after_oom = true});
  const auto m = r.run({alloc(0x1000, 40 * kMiB), alloc(0x2000, 40 * kMiB)});
  EXPECT_EQ(m.alloc_retries, 1u);
  EXPECT_EQ(m.policy_stats.at("num_alloc_retries"), 1u);
  EXPECT_EQ(m.policy_stats.at("num_ooms"), 1u);
  EXPECT_EQ(m.policy_stats.at("num_device_alloc"), r.device.counters().malloc_calls);
  EXPECT_EQ(m.policy_stats.at("reserved_bytes.all.peak"), m.reserved_peak);
  EXPECT_EQ(m.policy_stats.at("reserved_bytes.all.allocated"), 40 * kMiB);
  EXPECT_EQ(m.policy_stats.at("allocated_bytes.all.current"), 40 * kMiB);
  EXPECT_TRUE(Replay("passthrough").run({alloc(0x1000, 10)}).policy_stats.empty());
}

TEST(Engine, StopsAtFirstOomAndNamesIt) {
  // A 100 MiB cap: the third 40 MiB block does not fit.
  Replay r("pytorch", 100 * kMiB);
  const auto m = r.run({alloc(0x1000, 40 * kMiB), alloc(0x2000, 40 * kMiB), free_completed(0x1000),
                        alloc(0x3000, 40 * kMiB), alloc(0x4000, 40 * kMiB), alloc(0x5000, 1)});
  ASSERT_TRUE(m.oom_at_event.has_value());
  EXPECT_EQ(*m.oom_at_event, 4u);
  EXPECT_EQ(m.ooms, 1u);
  EXPECT_EQ(m.events, 5u);  // the last alloc was never replayed
  EXPECT_EQ(*m.oom_request_bytes, 40 * kMiB);
}

TEST(Engine, KeepGoingCountsEveryOomAndSkipsTheirFrees) {
  Replay r("pytorch", 50 * kMiB, ReplayOptions{.continue_after_oom = true});
  const auto m = r.run({alloc(0x1000, 40 * kMiB), alloc(0x2000, 40 * kMiB), free_completed(0x2000),
                        alloc(0x3000, 40 * kMiB), free_completed(0x3000)});
  EXPECT_EQ(m.ooms, 2u);
  EXPECT_EQ(*m.oom_at_event, 1u);
  EXPECT_EQ(m.skipped_events, 0u);
}

TEST(Engine, PreexistingStateIsAdoptedAtItsAddresses) {
  // A trace that starts mid-run: a 20 MiB segment holding a 4 MiB block at offset 2 MiB.
  Replay r("pytorch");
  Event segment{.kind = EventKind::segment_alloc, .address = 0x10000000, .size = 20 * kMiB, .flags = kPreexisting};
  Event block{.kind = EventKind::alloc,
              .address = 0x10000000 + 2 * kMiB,
              .size = 4 * kMiB - 100,
              .flags = kPreexisting,
              .aux = 4 * kMiB};
  const auto m = r.run({segment, block, free_completed(0x10000000 + 2 * kMiB), alloc(0x1, 18 * kMiB)});
  EXPECT_EQ(m.preexisting_segments, 1u);
  EXPECT_EQ(m.device_alloc_calls, 1u);  // the adopted segment; the 18 MiB block fits in it once merged
  EXPECT_EQ(m.reserved_peak, 20 * kMiB);
  EXPECT_EQ(m.events, 2u);  // adopted blocks are state, not replayed events
}

TEST(Engine, ReservedNeverBelowAllocatedNeverBelowRequested) {
  Replay r("pytorch");
  std::vector<Event> events;
  for (uint64_t i = 0; i < 200; ++i) events.push_back(alloc(0x1000 + i * 0x100000, 1 + (i * 7919) % (3 * kMiB)));
  for (uint64_t i = 0; i < 200; i += 2) events.push_back(free_completed(0x1000 + i * 0x100000));
  const auto m = r.run(events);
  EXPECT_GE(m.reserved_peak, m.allocated_peak);
  EXPECT_GE(m.allocated_peak, m.requested_peak);
  for (const auto& p : m.timeline) {
    EXPECT_GE(p.reserved, p.allocated);
    EXPECT_GE(p.allocated, p.requested);
  }
}

TEST(Engine, JsonHasTheDocumentedKeys) {
  Replay r("passthrough");
  const auto json = to_json(r.run({alloc(0x1000, 10)}));
  for (const char* key : {"events", "reserved_peak", "allocated_peak", "requested_peak", "device_alloc_calls",
                          "device_free_calls", "alloc_retries", "ooms", "oom_at_event", "replay_seconds",
                          "fragmentation_at_peak", "free_fragmentation_at_peak", "timeline"})
    EXPECT_TRUE(json.contains(key)) << key;
  EXPECT_TRUE(json["oom_at_event"].is_null());
}

TEST(Timeline, StaysBoundedAndKeepsThePeak) {
  Timeline timeline(16);
  for (uint64_t i = 0; i < 100000; ++i) timeline.record(i, i, i == 777 ? 1000000 : i % 100, 0, 0);
  const auto points = timeline.points();
  EXPECT_LE(points.size(), 16u);
  uint64_t peak = 0;
  for (const auto& p : points) peak = std::max(peak, p.reserved);
  EXPECT_EQ(peak, 1000000u);
}

TEST(FreeSpace, GapsBetweenLiveBlocksInsideBackedRanges) {
  std::vector<std::pair<uint64_t, uint64_t>> backed = {{0, 100}, {200, 260}};
  std::vector<std::pair<uint64_t, uint64_t>> live = {{210, 10}, {10, 20}, {80, 20}};
  const FreeSpace f = measure_free_space(backed, live);
  EXPECT_EQ(f.total_free, 10u + 50u + 10u + 40u);  // [0,10) [30,80) [200,210) [220,260)
  EXPECT_EQ(f.largest_free, 50u);
}

}  // namespace
}  // namespace memreplay
