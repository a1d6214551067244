// The writer thread's parts of LiveRecorder, each on its own: the merge of the rings into
// sequence order and the wait at a gap (trace_order.h), and the sizes given to frees
// (free_sizes.h). live_recorder_test.cpp checks them again through whole recordings.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "recorder/live/free_sizes.h"
#include "recorder/live/trace_order.h"

namespace memreplay::detail {
namespace {

std::vector<LiveRecord> records(std::initializer_list<uint64_t> seqs) {
  std::vector<LiveRecord> out;
  for (uint64_t seq : seqs)
    out.push_back(LiveRecord{.seq = seq, .context = 0, .thread = 0, .time_in_ticks = false, .event = {}});
  return out;
}

std::vector<uint64_t> seqs(const std::vector<LiveRecord>& staged) {
  std::vector<uint64_t> out;
  for (const LiveRecord& r : staged) out.push_back(r.seq);
  return out;
}

TEST(TraceOrder, MergesEachRingsRunIntoSequenceOrder) {
  // Staged before: 0 2; then one drain of three rings: [1 5], [3 4], [6].
  std::vector<LiveRecord> staged = records({0, 2, 1, 5, 3, 4, 6});
  const std::vector<size_t> run_starts = {2, 4, 6};
  TraceOrder::merge_runs(staged, run_starts);
  EXPECT_EQ(seqs(staged), (std::vector<uint64_t>{0, 1, 2, 3, 4, 5, 6}));
}

TEST(TraceOrder, WritesUpToAGapAndAllOfItWhenForced) {
  TraceOrder order(1000);
  const std::vector<LiveRecord> staged = records({0, 1, 3, 4});  // 2 taken, not yet published
  EXPECT_EQ(order.ready_prefix(staged, /*force=*/false), 2u);
  EXPECT_EQ(order.ready_prefix(staged, /*force=*/true), 4u);
  order.written(0);
  order.written(1);
  EXPECT_EQ(order.next_seq(), 2u);
  // Once 2 is written the rest continues the sequence.
  order.written(2);
  EXPECT_EQ(order.ready_prefix(records({3, 4}), false), 2u);
}

TEST(TraceOrder, StopsWaitingForAGapWhenTooMuchIsStaged) {
  TraceOrder order(3);
  EXPECT_EQ(order.ready_prefix(records({1, 2, 3, 4}), false), 4u);  // 0 missing, 4 > 3 staged
  TraceOrder patient(10);
  EXPECT_EQ(patient.ready_prefix(records({1, 2, 3, 4}), false), 0u);
}

TEST(TraceOrder, StopsWaitingForAGapThatStaysOpen) {
  TraceOrder order(1000);
  const std::vector<LiveRecord> staged = records({1});
  EXPECT_EQ(order.ready_prefix(staged, false), 0u);
  std::this_thread::sleep_for(TraceOrder::kGapTimeout + std::chrono::milliseconds(20));
  EXPECT_EQ(order.ready_prefix(staged, false), 1u);
}

Event event(EventKind kind, uint64_t address, uint64_t size, uint64_t aux = 0, uint32_t flags = 0) {
  return Event{.kind = kind, .address = address, .size = size, .flags = flags, .aux = aux};
}

TEST(FreeSizes, GivesFreesTheSizeOfTheirAllocation) {
  FreeSizes sizes;
  Event alloc = event(EventKind::alloc, 0x1000, 512);
  Event segment = event(EventKind::segment_alloc, 0x1000, 1 << 20);  // same address, other table
  Event physical = event(EventKind::physical_alloc, 0, 2 << 20, /*handle=*/7);
  sizes.fill(alloc);
  sizes.fill(segment);
  sizes.fill(physical);

  Event requested = event(EventKind::free_requested, 0x1000, 0);
  Event completed = event(EventKind::free_completed, 0x1000, 0);
  Event segment_free = event(EventKind::segment_free, 0x1000, 0);
  Event physical_free = event(EventKind::physical_free, 0, 0, 7);
  for (Event* e : {&requested, &completed, &segment_free, &physical_free}) sizes.fill(*e);
  EXPECT_EQ(requested.size, 512u);
  EXPECT_EQ(completed.size, 512u);
  EXPECT_EQ(segment_free.size, 1u << 20);
  EXPECT_EQ(physical_free.size, 2u << 20);

  Event again = event(EventKind::free_completed, 0x1000, 0);  // forgotten at free_completed
  sizes.fill(again);
  EXPECT_EQ(again.size, 0u);
}

TEST(FreeSizes, KeepsAGivenSizeAndIgnoresFailedCalls) {
  FreeSizes sizes;
  Event failed = event(EventKind::segment_alloc, 0x2000, 4096, 0, kFailed);
  sizes.fill(failed);
  Event free_of_failed = event(EventKind::segment_free, 0x2000, 0);
  sizes.fill(free_of_failed);
  EXPECT_EQ(free_of_failed.size, 0u);

  Event alloc = event(EventKind::alloc, 0x3000, 100);
  sizes.fill(alloc);
  Event sized = event(EventKind::free_completed, 0x3000, 64);
  sizes.fill(sized);
  EXPECT_EQ(sized.size, 64u);
}

}  // namespace
}  // namespace memreplay::detail
