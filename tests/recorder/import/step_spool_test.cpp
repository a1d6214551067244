// The step spool (recorder/import/step_spool.h): a device's entries kept in memory, then written to
// scratch files in batches on a thread of their own. Every entry comes back after the seal, in
// order, across the spill and the batches; a spool moved while a batch is written (a vector of
// devices growing) keeps them; a write that fails is the import's InputError, not lost entries.
#include "recorder/import/input/step_spool.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>

#include <string>
#include <vector>

#include "proto/input_error.h"

namespace memreplay {
namespace {

// Past the in-memory part, several batches and a partial one.
constexpr size_t kEntries = StepSpool::kInMemoryEntries + 5 * 65536 + 123;

TraceStep step_at(size_t i) {
  return {.address = 0x7f0000000000 + i * 512,
          .size = i % 4096 + 1,
          .stream = static_cast<uint32_t>(i % 3),
          .kind = i % 2 ? EventKind::free_completed : EventKind::alloc};
}
uint64_t time_at(size_t i) { return 1'000'000 + i * 7; }
uint32_t stack_at(size_t i) { return static_cast<uint32_t>(i % 1000); }

void push_entries(StepSpool& spool, size_t begin, size_t end) {
  for (size_t i = begin; i < end; ++i) spool.push(step_at(i), time_at(i), stack_at(i));
}

// The first entry that differs from what was pushed, or `count` when none does.
size_t first_mismatch(const StepSpool& spool, size_t count) {
  const auto steps = spool.steps();
  if (steps.size() != count) return 0;
  for (size_t i = 0; i < count; ++i) {
    const TraceStep want = step_at(i);
    const TraceStep& got = steps[i];
    if (got.address != want.address || got.size != want.size || got.stream != want.stream || got.kind != want.kind ||
        spool.time(i) != time_at(i) || spool.stack(i) != stack_at(i))
      return i;
  }
  return count;
}

TEST(StepSpool, EveryEntryComesBackAcrossTheSpillAndTheBatches) {
  StepSpool spool("test.pickle");
  push_entries(spool, 0, kEntries);
  spool.seal();
  ASSERT_EQ(spool.size(), kEntries);
  EXPECT_EQ(first_mismatch(spool, kEntries), kEntries);
  EXPECT_EQ(spool.last_time(), time_at(kEntries - 1));
  spool.release_all();  // pages given back read in again from the files
  EXPECT_EQ(first_mismatch(spool, kEntries), kEntries);
}

TEST(StepSpool, EntriesHeldInMemoryComeBackToo) {
  StepSpool spool("test.pickle");
  push_entries(spool, 0, 1000);
  spool.seal();
  EXPECT_EQ(first_mismatch(spool, 1000), 1000u);
}

// The snapshot reader keeps one spool per device in a vector: a new device moves the spools while
// the first one's batch may be on its way to the file.
TEST(StepSpool, ASpoolMovedWhileABatchIsWrittenKeepsItsEntries) {
  std::vector<StepSpool> spools;
  spools.emplace_back("test.pickle");
  push_entries(spools[0], 0, StepSpool::kInMemoryEntries + 65536);  // two writes started
  for (int d = 1; d < 64; ++d) spools.emplace_back("test.pickle");  // the vector grows: moves
  push_entries(spools[0], StepSpool::kInMemoryEntries + 65536, kEntries);
  for (StepSpool& spool : spools) spool.seal();
  EXPECT_EQ(first_mismatch(spools[0], kEntries), kEntries);
  EXPECT_EQ(spools[63].size(), 0u);
}

// The file size limit makes write() fail as a full disk does (EFBIG, with SIGXFSZ ignored).
TEST(StepSpool, AWriteThatFailsIsAnInputErrorNamingTheInput) {
  rlimit before{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &before), 0);
  const auto old_handler = signal(SIGXFSZ, SIG_IGN);
  rlimit small = before;
  small.rlim_cur = 4 << 20;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string error;
  try {
    StepSpool spool("hostile.pickle");
    push_entries(spool, 0, kEntries);
    spool.seal();
  } catch (const InputError& e) {
    error = e.what();
  }
  setrlimit(RLIMIT_FSIZE, &before);
  signal(SIGXFSZ, old_handler);
  EXPECT_NE(error.find("hostile.pickle: cannot write scratch data"), std::string::npos) << error;
}

}  // namespace
}  // namespace memreplay
