// Streaming import: a snapshot much bigger than the memory it is given
// imports whole. The fixture is tools/bench/make_big_snapshot.py's: the shared gpt2_generate trace
// repeated at shifted addresses and times, as CPython lays out a real snapshot. The CLI runs as a
// child process and its peak resident memory (wait4's ru_maxrss) is what is asserted; the
// events it writes are checked against the same snapshot with one copy, imported in-process.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zstd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "proto/trace_reader.h"
#include "proto/trace_sink.h"
#include "recorder/import/import.h"
#include "recorder/import/input/step_spool.h"
#include "tests/support/sanitizer.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

namespace fs = std::filesystem;

struct ChildRun {
  int status = -1;
  long max_rss_kib = 0;
};

// Runs argv[0] with its output to /dev/null; exit status and peak resident memory of that process.
ChildRun run_child(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    std::freopen("/dev/null", "w", stdout);
    execv(args[0], args.data());
    _exit(127);
  }
  ChildRun run;
  int raw = 0;
  rusage usage{};
  if (pid > 0 && wait4(pid, &raw, 0, &usage) == pid) {
    run.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    run.max_rss_kib = usage.ru_maxrss;
  }
  return run;
}

// The big snapshot: `copies` copies of gpt2_generate (453,173 entries, 32.4 MB each).
std::string make_big_snapshot(const std::string& path, int copies) {
  const std::string command = "python3 " + (testing::source_dir() / "tools/bench/make_big_snapshot.py").string() + " " +
                              testing::real_data_path("traces/gpt2_generate.default.pickle.xz").string() + " " + path +
                              " --copies " + std::to_string(copies) + " >/dev/null";
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  return path;
}

void zstd_compress_file(const std::string& from, const std::string& to) {
  const std::string bytes = testing::read_bytes(from);
  std::string out(ZSTD_compressBound(bytes.size()), '\0');
  const size_t n = ZSTD_compress(out.data(), out.size(), bytes.data(), bytes.size(), 1);
  ASSERT_FALSE(ZSTD_isError(n));
  std::ofstream(to, std::ios::binary).write(out.data(), static_cast<std::streamsize>(n));
}

uint64_t event_count(const std::string& trace) {
  TraceReader reader(trace);
  return reader.footer() != nullptr ? reader.footer()->total_events() : 0;
}

// Under AddressSanitizer resident memory holds its shadow and quarantine too: the bound is the
// Release build's to keep; the sanitizer build still checks that every event arrives.
#if MEMREPLAY_TEST_UNDER_ASAN
constexpr long kResidentLimitKiB = 1024 * 1024;
constexpr long kSmallInputLimitKiB = 512 * 1024;  // the bomb it guards against took 4 GB
#else
constexpr long kResidentLimitKiB = 256 * 1024;
constexpr long kSmallInputLimitKiB = 128 * 1024;
#endif

class StreamingImport : public testing::TempDirTest {};

// 2.7 M entries in a 195 MB pickle, far past the entries kept in memory (StepSpool), under a
// quarter of a GiB, both plain and zstd-compressed; every copy's events are there.
TEST_F(StreamingImport, A200MBSnapshotImportsInUnder256MiBResident) {
  constexpr int kCopies = 6;
  const std::string one = make_big_snapshot(path("one.pickle"), 1);
  CollectingSink single;
  import_file(one, single);
  ASSERT_GT(single.events.size(), 10'000u);

  const std::string big = make_big_snapshot(path("big.pickle"), kCopies);
  ASSERT_GT(fs::file_size(big), 190'000'000u);
  const ChildRun plain = run_child({MEMREPLAY_CLI, "import", big, "-o", path("big.mrt")});
  EXPECT_EQ(plain.status, 0);
  EXPECT_LT(plain.max_rss_kib, kResidentLimitKiB) << "peak resident KiB importing " << big;
  EXPECT_EQ(event_count(path("big.mrt")), kCopies * single.events.size());
  EXPECT_GT(kCopies * single.events.size(), 2 * StepSpool::kInMemoryEntries);

  zstd_compress_file(big, path("big.pickle.zst"));
  fs::remove(big);
  const ChildRun zstd = run_child({MEMREPLAY_CLI, "import", path("big.pickle.zst"), "-o", path("zst.mrt")});
  EXPECT_EQ(zstd.status, 0);
  EXPECT_LT(zstd.max_rss_kib, kResidentLimitKiB) << "peak resident KiB importing the .zst";
  EXPECT_EQ(event_count(path("zst.mrt")), kCopies * single.events.size());
}

// The spool's columns are reserved per device and go to huge pages once they are big: a snapshot
// of a thousand devices with one entry each (a few KB) stays small, not a huge page per column.
TEST_F(StreamingImport, AThousandDevicesOfOneEntryStaySmall) {
  const std::string snapshot = path("devices.pickle");
  const std::string command =
      "python3 -c \"import pickle; e = {'action': 'alloc', 'addr': 512, 'size': 512, 'stream': 0, 'time_us': 1}; "
      "pickle.dump({'segments': [], 'device_traces': [[dict(e)] for _ in range(1000)]}, open('" +
      snapshot + "', 'wb'), protocol=4)\"";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  ASSERT_LT(fs::file_size(snapshot), 100'000u);
  const ChildRun run = run_child({MEMREPLAY_CLI, "import", snapshot, "-o", path("devices.mrt")});
  EXPECT_EQ(run.status, 0);
  EXPECT_LT(run.max_rss_kib, kSmallInputLimitKiB) << "peak resident KiB importing " << snapshot;
  EXPECT_EQ(event_count(path("devices.mrt")), 1000u);
}

}  // namespace
}  // namespace memreplay
