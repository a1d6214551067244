// Release-and-retry against empty_cache() where a snapshot without stacks cannot tell them apart
// (recorder/import/pytorch/empty_cache_inference.h), settled under the cap the run had
// (replayer/retry_reading_sink.h), and that cap carried in a trace's header (DeviceInfo.cap_bytes).
// Real data of tests/data/pools (its README): the capped job, its variant with a retry right after
// a free and no stacks, the job that calls empty_cache(), their live statistics and PyTorch's own
// replays of the snapshots.
#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "proto/trace_reader.h"
#include "proto/trace_writer.h"
#include "recorder/import/import.h"
#include "replayer/replay_runner.h"
#include "replayer/retry_reading_sink.h"
#include "tests/support/cli_run.h"
#include "tests/support/groundtruth_rows.h"
#include "tests/support/test_support.h"
#include "tests/support/trace_rewrite.h"

namespace memreplay {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::read_json;

fs::path pool_data(const std::string& name) { return testing::source_dir() / "tests/data/pools" / name; }
std::string snapshot(const std::string& name) { return pool_data(name + ".pickle.xz").string(); }

uint64_t empty_caches(const std::string& trace) {
  uint64_t n = 0;
  for (const Event& e : TraceReader::read_all(trace)) n += e.kind == EventKind::empty_cache;
  return n;
}

// The capped job's cap (set_per_process_memory_fraction × total memory): 867,416,960 bytes.
uint64_t job_cap() { return testing::live_cap_bytes(read_json(pool_data("capped_retry.live.json"))).value(); }

class RetryReading : public testing::TempDirTest {
 protected:
  // `source` imported under `cap` into DIR/NAME.mrt, as `memreplay import --capacity` does.
  std::string import_under(const std::string& source, uint64_t cap, const std::string& name = "capped.mrt") {
    const std::string out = path(name);
    TraceWriter writer(out);
    RetryReadingSink capped(writer, cap);
    import_file(source, capped);
    settled_ = capped.settled();
    retries_ = capped.retries();
    oom_at_ = capped.out_of_memory_at();
    return out;
  }
  ReplayMetrics replay(const std::string& trace, std::optional<uint64_t> capacity, const std::string& conf = "") {
    ReplayOptions options;
    options.trace_path = trace;
    options.policy_spec = testing::policy_for(conf);
    options.capacity = capacity;
    return run_replay(options);
  }
  uint64_t settled_ = 0, retries_ = 0;
  std::optional<uint64_t> oom_at_;
};

// The capped job with a 512-byte alloc and free put right before its first retry, without stacks
// (make_stack_variants.py): the snapshot alone reads that burst as an empty_cache (it follows a
// free), and the replay under the cap counts one retry fewer than the job. Under the job's cap,
// the importer asks: the allocation after each burst does not fit without releasing the cache, so
// both bursts are the allocator's retries, and the replay is the job's own run, retries included.
TEST_F(RetryReading, TheJobsCapSettlesARetryRightAfterAFreeWithoutStacks) {
  const json live = read_json(pool_data("capped_retry.live.json"));
  const json row = read_json(pool_data("replay/capped_retry.livecap.json"))["run"];
  ASSERT_EQ(row["cap_bytes"].get<uint64_t>(), job_cap());

  const std::string plain = testing::imported_file(snapshot("capped_retry.retry_after_free"));
  EXPECT_EQ(empty_caches(plain), 1u);  // without a capacity, as before: rule 3
  EXPECT_EQ(replay(plain, job_cap()).alloc_retries, 1u);

  const std::string capped = import_under(snapshot("capped_retry.retry_after_free"), job_cap());
  EXPECT_EQ(settled_, 2u);
  EXPECT_EQ(retries_, 2u);
  EXPECT_FALSE(oom_at_.has_value());
  EXPECT_EQ(empty_caches(capped), 0u);
  const ReplayMetrics m = replay(capped, job_cap());
  testing::expect_equals_live_run(m, live);  // reserved peak, cudaMalloc / cudaFree calls, retries
  EXPECT_EQ(m.alloc_retries, 2u);
  EXPECT_EQ(m.allocated_peak, live["max_memory_allocated"].get<uint64_t>());
  // PyTorch's own allocator replaying the job's snapshot under that cap, field by field (the 512
  // bytes moved in change no peak).
  testing::expect_equals_replay_row(m, row);

  // The stacks variant reads the same without a cap; with one, it is not asked (rule 0 settles it).
  const std::string stacks = import_under(snapshot("capped_retry.retry_after_free.stacks"), job_cap(), "s.mrt");
  EXPECT_EQ(settled_, 0u);
  EXPECT_EQ(TraceReader::read_all(stacks).size(), TraceReader::read_all(capped).size());
}

// The cap goes into the header of the trace it imports; a replay given no capacity takes it from
// there and says so, and a capacity given still wins.
TEST_F(RetryReading, TheImportedTraceRecordsTheCapForItsReplays) {
  const std::string capped = import_under(snapshot("capped_retry.retry_after_free"), job_cap());
  TraceReader reader(capped);
  ASSERT_EQ(reader.header().devices_size(), 1);
  EXPECT_EQ(reader.header().devices(0).cap_bytes(), job_cap());
  EXPECT_EQ(recorded_capacity(reader.header(), 0), job_cap());
  EXPECT_EQ(recorded_capacity(reader.header(), 1), std::nullopt);

  ReplayOptions options;
  options.trace_path = capped;
  const std::optional<std::string> note = use_recorded_capacity(options);
  ASSERT_TRUE(note.has_value());
  EXPECT_NE(note->find("827.23 MiB (867416960 B)"), std::string::npos) << *note;
  EXPECT_EQ(options.capacity, job_cap());
  testing::expect_equals_live_run(run_replay(options), read_json(pool_data("capped_retry.live.json")));

  ReplayOptions given = options;
  given.capacity = uint64_t{1} << 30;
  EXPECT_EQ(use_recorded_capacity(given), std::nullopt);
  EXPECT_EQ(given.capacity, uint64_t{1} << 30);
  ReplayOptions plain;
  plain.trace_path = testing::imported_file(snapshot("capped_retry.retry_after_free"));
  EXPECT_EQ(use_recorded_capacity(plain), std::nullopt);  // a snapshot records no cap
  EXPECT_EQ(plain.capacity, std::nullopt);
}

// The job that calls empty_cache() every 5th step, no cap: its 3 bursts stay empty_cache calls
// under a cap too (the allocation after each fits without releasing anything), and every capped
// replay of it stays PyTorch's own, as it does without stacks or with them.
TEST_F(RetryReading, RealEmptyCacheCallsStayEmptyCacheCallsUnderACap) {
  for (const char* config : {"capped112", "gc07"}) {
    SCOPED_TRACE(config);
    const json truth = read_json(pool_data(std::string("replay/empty_cache_steps.") + config + ".json"));
    const uint64_t cap = truth["run"]["cap_bytes"].get<uint64_t>();
    ASSERT_EQ(truth["empty_cache_before_events"].size(), 3u);
    for (const char* variant : {"empty_cache_steps", "empty_cache_steps.stacks"}) {
      const std::string capped = import_under(snapshot(variant), cap);
      EXPECT_EQ(empty_caches(capped), 3u) << variant;
      EXPECT_EQ(retries_, 0u) << variant;
      testing::expect_equals_replay_row(replay(capped, cap, truth["alloc_conf"]), truth["run"]);
    }
    import_under(snapshot("empty_cache_steps"), cap);
    if (truth["run"]["oom_at_event"].is_null()) {
      EXPECT_GT(settled_, 0u) << "the bursts followed by a new segment are asked, and read as empty_cache";
    } else {  // capped112 runs out of memory (as PyTorch's replay does): the bursts after keep their reading
      EXPECT_TRUE(oom_at_.has_value());
    }
  }
  // Far below what the job needs: the replay under the cap runs out of memory early, and every
  // burst keeps its reading without the cap.
  EXPECT_EQ(empty_caches(import_under(snapshot("empty_cache_steps"), 64ull << 20)), 3u);
  EXPECT_TRUE(oom_at_.has_value());
}

// Every capped row of PyTorch's replays of the pool jobs, imported under its cap: still exact.
TEST_F(RetryReading, EveryCappedPoolRowStaysExactImportedUnderItsCap) {
  size_t rows = 0;
  for (const auto& entry : fs::directory_iterator(pool_data("replay"))) {
    const json truth = read_json(entry.path());
    if (truth["run"]["cap_bytes"].is_null()) continue;
    SCOPED_TRACE(entry.path().filename().string());
    const uint64_t cap = truth["run"]["cap_bytes"].get<uint64_t>();
    const std::string job = truth["snapshot"].get<std::string>();
    const std::string capped = import_under(pool_data(job).string(), cap);
    // Under the job's own cap the reading is the run's; under another cap (capped112, gc07) a burst
    // may read otherwise, and only what the replay gives is compared.
    if (entry.path().filename().string().ends_with(".livecap.json"))
      EXPECT_EQ(empty_caches(capped), truth["empty_cache_before_events"].size());
    testing::expect_equals_replay_row(replay(capped, cap, truth["alloc_conf"]), truth["run"]);
    ++rows;
  }
  EXPECT_EQ(rows, 13u * 2 + 2);  // 13 jobs x (capped112, gc07), and the two capped jobs under their own caps
}

// A cap below what the trace needs: the import goes through (the bursts after the OOM keep their
// reading without the cap) and says where; the replay under it is an ordinary OOM result.
TEST_F(RetryReading, ACapBelowWhatTheTraceNeedsIsAnOomNotAFailure) {
  const std::string capped = import_under(snapshot("capped_retry.retry_after_free"), 64ull << 20);
  ASSERT_TRUE(oom_at_.has_value());
  EXPECT_EQ(empty_caches(capped), 1u);  // rule 3's reading
  const ReplayMetrics m = replay(capped, 64ull << 20);
  ASSERT_TRUE(m.oom_trace_event.has_value());
  EXPECT_EQ(m.oom_trace_event, oom_at_);

  const testing::CliRun import = testing::run_memreplay(
      "import " + snapshot("capped_retry.retry_after_free") + " -o " + path("small.mrt") + " --capacity 64MiB", dir_);
  EXPECT_EQ(import.status, 0) << import.err;
  EXPECT_NE(import.err.find("--capacity 64.00 MiB: the trace does not fit under it (replayed, it runs out of memory "
                            "at trace event " +
                            std::to_string(*oom_at_) + ")"),
            std::string::npos)
      << import.err;
  const testing::CliRun run =
      testing::run_memreplay("replay " + snapshot("capped_retry.retry_after_free") + " --capacity 64MiB", dir_);
  EXPECT_EQ(run.status, 1) << run.err;  // the OOM's exit status, and its report
  EXPECT_NE(run.out.find("OOM at replay event"), std::string::npos) << run.out;
  const testing::CliRun zero = testing::run_memreplay(
      "import " + snapshot("capped_retry.retry_after_free") + " -o " + path("zero.mrt") + " --capacity 0", dir_);
  EXPECT_EQ(zero.status, 2);
  EXPECT_NE(zero.err.find("--capacity"), std::string::npos) << zero.err;
}

// The CLI: a snapshot replayed with --capacity is imported under it, whichever comes first on the
// command line; `import --capacity` records the cap, `info` shows it, and `replay` takes it from
// there unless given another.
TEST_F(RetryReading, TheCliImportsASnapshotUnderItsCapacity) {
  const std::string cap = std::to_string(job_cap()) + "B";
  const std::string snap = snapshot("capped_retry.retry_after_free");
  for (const std::string& arguments :
       {"replay " + snap + " --capacity " + cap + " --json -", "replay --capacity " + cap + " " + snap + " --json -"}) {
    const testing::CliRun run = testing::run_memreplay(arguments, dir_);
    ASSERT_EQ(run.status, 0) << run.err;
    EXPECT_EQ(json::parse(run.out)["alloc_retries"].get<uint64_t>(), 2u) << arguments;
  }
  ASSERT_EQ(testing::run_memreplay("import " + snap + " -o " + path("run.mrt") + " --capacity " + cap, dir_).status, 0);
  EXPECT_NE(testing::run_memreplay("info " + path("run.mrt")).out.find("recorded per-process cap: 827.23 MiB"),
            std::string::npos);
  const testing::CliRun recorded = testing::run_memreplay("replay " + path("run.mrt") + " --json -", dir_);
  ASSERT_EQ(recorded.status, 0) << recorded.err;
  EXPECT_EQ(json::parse(recorded.out)["capacity"].get<uint64_t>(), job_cap());
  EXPECT_EQ(json::parse(recorded.out)["alloc_retries"].get<uint64_t>(), 2u);
  EXPECT_NE(recorded.err.find("replayed under the per-process cap the run recorded on device 0, 827.23 MiB"),
            std::string::npos)
      << recorded.err;
  const testing::CliRun given = testing::run_memreplay("replay " + path("run.mrt") + " --capacity 1GiB --json -", dir_);
  EXPECT_EQ(json::parse(given.out)["capacity"].get<uint64_t>(), uint64_t{1} << 30);
  EXPECT_EQ(given.err.find("the run recorded"), std::string::npos) << given.err;
}

// A live trace with the job's cap in its header (memreplay.torch writes it: "device_cap") replays
// to the job's own statistics without being given a capacity.
TEST_F(RetryReading, ALiveTraceWithItsCapReplaysToTheJobWithoutACapacity) {
  const json live = read_json(pool_data("live/capped_retry.mrtlive.json"));
  const uint64_t cap = testing::live_cap_bytes(live).value();
  testing::rewrite_trace(pool_data("live/capped_retry.live.mrt").string(), path("live.mrt"),
                         [&](proto::TraceHeader& header) {
                           ASSERT_GT(header.devices_size(), 0);
                           ASSERT_EQ(header.devices(0).cap_bytes(), 0u);  // recorded before the recorder wrote caps
                           header.mutable_devices(0)->set_cap_bytes(cap);
                         });
  ReplayOptions options;
  options.trace_path = path("live.mrt");
  ASSERT_TRUE(use_recorded_capacity(options).has_value());
  testing::expect_equals_live_run(run_replay(options), live);
  options.capacity.reset();
  EXPECT_EQ(run_replay(options).alloc_retries, 0u);  // uncapped, the same trace needs no retry
}

}  // namespace
}  // namespace memreplay
