// Private pools and release-and-retry against PyTorch's real allocator: the jobs of
// tools/gpu/pool_job_workloads.py, captured with torch 2.11 (tests/data/pools/, see its README):
// two CUDA graphs sharing a pool (with eager work between captures and replays; and that pool
// released before the snapshot), a MemPool KV cache, make_graphed_callables, torch.compile in
// reduce-overhead and default mode, capped training that needs alloc retries (recorded without
// stacks), jobs that call empty_cache, variable-length training with checkpointing and a
// variable-resolution CNN. Each snapshot is imported, then replayed with the pytorch
// policy under the configs PyTorch's own replay ran (tests/data/pools/replay/JOB.CONFIG.json).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "proto/input_error.h"
#include "proto/trace_reader.h"
#include "proto/trace_writer.h"
#include "replayer/replay_runner.h"
#include "replayer/trace_summary.h"
#include "replayer/trace_validator.h"
#include "tests/support/cli_run.h"
#include "tests/support/groundtruth_rows.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::read_json;

fs::path pool_data(const std::string& name = "") { return testing::source_dir() / "tests/data/pools" / name; }

constexpr const char* kJobs[] = {
    "graphs_shared_pool",   "mempool_kv_cache",     "graphed_callables",    "compile_reduce_overhead",  "capped_retry",
    "empty_cache_steps",    "graphs_eager_between", "graphs_pool_released", "compile_default_training", "capped_varlen",
    "varlen_checkpointing", "varres_fcn",           "models_in_turn"};
// Jobs with PyTorch's replays under the seven configs in replay/ (and, run under a cap, under it).
constexpr size_t kJobsWithRows = std::size(kJobs);
constexpr size_t kCappedJobs = 2;  // capped_retry, capped_varlen

// The job's snapshot imported once per test process.
std::string pool_trace(const std::string& job) { return testing::imported_file(pool_data(job + ".pickle.xz")); }

std::vector<Event> all_events(const std::string& path) { return TraceReader::read_all(path); }

// Every job whose snapshot was captured with its own counters (JOB.live.json).
std::vector<std::string> captured_jobs() {
  std::vector<std::string> jobs;
  if (fs::is_directory(pool_data()))
    for (const auto& entry : fs::directory_iterator(pool_data())) {
      const std::string name = entry.path().filename().string();
      if (name.ends_with(".live.json")) jobs.push_back(name.substr(0, name.size() - std::string(".live.json").size()));
    }
  std::sort(jobs.begin(), jobs.end());
  return jobs;
}

std::vector<std::string> replay_rows() {
  std::vector<std::string> rows;
  if (fs::is_directory(pool_data("replay")))
    for (const auto& entry : fs::directory_iterator(pool_data("replay")))
      if (entry.path().extension() == ".json") rows.push_back(entry.path().stem().string());
  std::sort(rows.begin(), rows.end());
  return rows;
}

TEST(PoolGroundTruthData, HasEveryJobAndRow) {
  for (const char* job : kJobs) EXPECT_TRUE(fs::exists(pool_data(std::string(job) + ".pickle.xz"))) << job;
  // Every job x 7 configs, and each capped job under its own cap.
  EXPECT_EQ(replay_rows().size(), kJobsWithRows * 7 + kCappedJobs) << "*.json in " << pool_data("replay");
}

TEST(PoolImport, PrivatePoolsAreNamedInTheHeaderWithTheirKind) {
  struct Expected {
    const char* job;
    const char* kind;
    uint64_t first, second;
  };
  for (const Expected& e :
       {Expected{"graphs_shared_pool", "graph", 1, 0}, Expected{"mempool_kv_cache", "mempool", 0, 1},
        Expected{"graphed_callables", "mempool", 0, 1}, Expected{"compile_reduce_overhead", "mempool", 0, 1}}) {
    TraceReader reader(pool_trace(e.job));
    ASSERT_EQ(reader.header().pools_size(), 1) << e.job;
    const auto& pool = reader.header().pools(0);
    EXPECT_EQ(pool.id(), 1u) << e.job;
    EXPECT_EQ(pool.kind(), e.kind) << e.job;
    EXPECT_EQ(pool.torch_id_first(), e.first) << e.job;
    EXPECT_EQ(pool.torch_id_second(), e.second) << e.job;
  }
  TraceReader plain(pool_trace("capped_retry"));
  EXPECT_EQ(plain.header().pools_size(), 0);
}

// Every allocation of a pool job lies in a live segment of its own pool, and every free goes back
// to the pool its block came from; the private pools hold allocations.
TEST(PoolImport, EveryAllocationLiesInASegmentOfItsPool) {
  for (const char* job : kJobs) {
    const auto events = all_events(pool_trace(job));
    TraceValidator validator(100, true);
    validator.add(events, 0);
    EXPECT_EQ(validator.problem_count(), 0u)
        << job << ": " << (validator.problems().empty() ? "" : validator.problems()[0].message);
    uint64_t private_allocs = 0, private_segments = 0;
    for (const Event& e : events) {
      private_allocs += e.kind == EventKind::alloc && e.pool != kDefaultPool;
      private_segments += e.kind == EventKind::segment_alloc && e.pool != kDefaultPool;
    }
    const bool has_pools = TraceReader(pool_trace(job)).header().pools_size() > 0;
    EXPECT_EQ(private_allocs > 0, has_pools) << job;
    EXPECT_EQ(private_segments > 0, has_pools) << job;
  }
}

// A free into another pool than its alloc's is refused with the event index (exit 2 in the CLI),
// or counted and skipped under lenient.
TEST(PoolImport, AFreeIntoAnotherPoolIsInconsistentInput) {
  auto events = all_events(pool_trace("mempool_kv_cache"));
  size_t victim = 0;
  for (size_t i = 0; i < events.size(); ++i)
    if (events[i].kind == EventKind::free_completed && events[i].pool != kDefaultPool) {
      victim = i;
      break;
    }
  ASSERT_NE(victim, 0u);
  events[victim].pool = kDefaultPool;
  TraceValidator validator(100, true);
  validator.add(events, 0);
  ASSERT_EQ(validator.problem_count(), 1u);
  EXPECT_EQ(validator.problems()[0].event, victim);
  EXPECT_EQ(validator.problems()[0].kind, "pool_mismatch");
}

// Release-and-retry is not empty_cache: the capped job's segment_free bursts (its 2 retries) are
// not inferred as empty_cache calls, while a job's real empty_cache calls are.
TEST(PoolImport, RetryBurstsAreNotInferredAsEmptyCache) {
  auto inferred = [](const std::string& job) {
    uint64_t n = 0;
    for (const Event& e : all_events(pool_trace(job))) n += e.kind == EventKind::empty_cache;
    return n;
  };
  EXPECT_EQ(inferred("capped_retry"), 0u);
  // torch.cuda.graph() calls empty_cache before each capture that follows eager work.
  EXPECT_EQ(inferred("graphs_shared_pool"), 1u);
  EXPECT_EQ(inferred("graphed_callables"), 2u);
  // empty_cache after every 5th of 20 steps: 3 of the 4 released something. The second came at the
  // reserved peak and was followed at once by a new segment, as a retry is; it came after a free,
  // as empty_cache calls do (recorder/import/empty_cache_inference.h, rule 3).
  EXPECT_EQ(inferred("empty_cache_steps"), 3u);
}

// Where a snapshot recorded stacks, they tell a release-and-retry from an empty_cache (rule 0 of
// recorder/import/empty_cache_inference.h). The capped job with a 512-byte alloc and free put right
// before its first retry burst (tests/data/pools/make_stack_variants.py): without stacks, imported
// without the job's cap, the burst follows a free and is read as an empty_cache, so the replay under
// the cap counts one retry fewer than the job (the documented bound; imported under the cap, it is
// settled: retry_reading_test.cpp); with the stacks PyTorch records (the releases carry
// the stack of the malloc that retried) it is a retry, and the replay is the job's own run, its 2
// retries included. With empty_cache()'s own stack on empty_cache_steps' bursts, all 3 are found.
TEST(PoolImport, RecordedStacksTellARetryAfterAFreeFromAnEmptyCache) {
  const json live = read_json(pool_data("capped_retry.live.json"));
  auto inferred = [](const std::string& trace) {
    uint64_t n = 0;
    for (const Event& e : all_events(trace)) n += e.kind == EventKind::empty_cache;
    return n;
  };
  ReplayOptions request;
  request.capacity = testing::live_cap_bytes(live);
  request.trace_path = pool_trace("capped_retry.retry_after_free");
  EXPECT_EQ(inferred(request.trace_path), 1u);
  const ReplayMetrics bare = run_replay(request);
  testing::expect_equals_live_run(bare, live, false);
  EXPECT_EQ(bare.alloc_retries, 1u);

  request.trace_path = pool_trace("capped_retry.retry_after_free.stacks");
  EXPECT_EQ(inferred(request.trace_path), 0u);
  testing::expect_equals_live_run(run_replay(request), live);

  EXPECT_EQ(inferred(pool_trace("empty_cache_steps.stacks")), 3u);
}

class PoolGroundTruthReplay : public ::testing::TestWithParam<std::string> {};

TEST_P(PoolGroundTruthReplay, MatchesPyTorchToTheByte) {
  const json truth = read_json(pool_data("replay/" + GetParam() + ".json"));
  const json& run = truth["run"];
  const std::string snapshot = truth["snapshot"];
  ReplayOptions request;
  request.trace_path = pool_trace(snapshot.substr(0, snapshot.find(".pickle")));
  request.policy_spec = testing::policy_for(truth["alloc_conf"]);
  if (!run["cap_bytes"].is_null()) request.capacity = run["cap_bytes"].get<uint64_t>();
  testing::expect_equals_replay_row(run_replay(request), run);
}

INSTANTIATE_TEST_SUITE_P(AllRows, PoolGroundTruthReplay, ::testing::ValuesIn(replay_rows()), testing::RowNamePrinter());

// Every captured job's snapshot, replayed under the job's own cap (if it ran under one), gives the
// job's own counters: reserved and allocated peaks, device mallocs and frees, retries. What the
// importer infers (pools, empty_cache calls, release-and-retry) is checked here against the run,
// not against PyTorch replaying the importer's own reading.
class PoolSnapshot : public ::testing::TestWithParam<std::string> {};

TEST_P(PoolSnapshot, ReplaysToTheJobsOwnCounters) {
  const json live = read_json(pool_data(GetParam() + ".live.json"));
  ReplayOptions request;
  request.trace_path = pool_trace(GetParam());
  request.capacity = testing::live_cap_bytes(live);
  const ReplayMetrics m = run_replay(request);
  testing::expect_equals_live_run(m, live);
  EXPECT_EQ(m.allocated_peak, live["max_memory_allocated"].get<uint64_t>());
}

INSTANTIATE_TEST_SUITE_P(AllJobs, PoolSnapshot, ::testing::ValuesIn(captured_jobs()), testing::RowNamePrinter());

TEST(PoolGroundTruthData, EveryJobHasItsCounters) { EXPECT_GE(captured_jobs().size(), std::size(kJobs) + 1); }

// The capped job replayed under its own cap reproduces the live run: reserved peak, device calls
// and its alloc retries.
TEST(PoolLiveRun, CappedRetryUnderItsCapReproducesTheLiveRun) {
  const json live = read_json(pool_data("capped_retry.live.json"));
  ReplayOptions request;
  request.trace_path = pool_trace("capped_retry");
  request.capacity = testing::live_cap_bytes(live);
  const ReplayMetrics m = run_replay(request);
  testing::expect_equals_live_run(m, live);
  EXPECT_EQ(m.alloc_retries, 2u);
  // Uncapped, the same trace needs no retry and frees no segment: no phantom empty_cache.
  request.capacity.reset();
  const ReplayMetrics free_run = run_replay(request);
  EXPECT_EQ(free_run.alloc_retries, 0u);
  EXPECT_EQ(free_run.device_free_calls, 0u);
}

// The same jobs recorded live by memreplay.torch (the tracker records each entry's pool): each
// trace replays to its own run's max_memory_reserved(), num_device_alloc/free and retries.
class PoolLiveRecorder : public ::testing::TestWithParam<std::string> {};

TEST_P(PoolLiveRecorder, TraceReplaysToTheJobsOwnStats) {
  const json live = read_json(pool_data("live/" + GetParam() + ".mrtlive.json"));
  ReplayOptions request;
  request.trace_path = pool_data("live/" + GetParam() + ".live.mrt").string();
  request.capacity = testing::live_cap_bytes(live);
  testing::expect_equals_live_run(run_replay(request), live);
  uint64_t private_allocs = 0;
  for (const Event& e : all_events(request.trace_path)) private_allocs += e.kind == EventKind::alloc && e.pool != 0;
  EXPECT_EQ(private_allocs > 0, !live["pools_made"].empty()) << "the tracker records each allocation's pool";
}

INSTANTIATE_TEST_SUITE_P(AllJobs, PoolLiveRecorder, ::testing::ValuesIn(captured_jobs()), testing::RowNamePrinter());

// A live trace names its pools in annotations, not in its header (written before any pool
// exists): its pool assignment is checked all the same. memreplay.torch's trace of the MemPool job
// with one private-pool free moved to the default pool is refused with that event's index, or
// counted and skipped under --lenient; the trace as recorded replays clean.
TEST(PoolLiveRun, ALiveTracesPoolAssignmentIsChecked) {
  const std::string recorded = pool_data("live/mempool_kv_cache.live.mrt").string();
  TraceReader reader(recorded);
  ASSERT_EQ(reader.header().pools_size(), 0) << "the live header names no pool";
  const auto dir = fs::temp_directory_path() / ("memreplay-livepool-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string broken = (dir / "broken.mrt").string();
  uint64_t victim = 0;
  {
    TraceWriter writer(broken);
    writer.begin(reader.header());
    std::vector<Event> batch;
    uint64_t index = 0;
    while (reader.next_batch(batch))
      for (Event e : batch) {
        if (victim == 0 && e.kind == EventKind::free_completed && e.pool != kDefaultPool) {
          victim = index;
          e.pool = kDefaultPool;
        }
        ++index;
        writer.append(e);
      }
    writer.finish();
  }
  ASSERT_NE(victim, 0u);
  ReplayOptions request;
  request.trace_path = recorded;
  EXPECT_EQ(run_replay(request).skipped_events, 0u);
  request.trace_path = broken;
  const std::string error = testing::error_of<InputError>([&] { run_replay(request); });
  EXPECT_NE(error.find("event " + std::to_string(victim)), std::string::npos) << error;
  request.lenient = true;
  EXPECT_EQ(run_replay(request).skipped_events, 1u);
  fs::remove_all(dir);
}

// graphs_shared_pool's snapshot with its first 80 entries dropped, as a ring buffer drops them: cut
// in the middle of the first graph's capture, so the starting state holds private-pool segments
// and blocks, and the capture goes on allocating from them. They are adopted into their own pool:
// the replay needs only the 12 segments the kept entries allocate, and peaks where the job did.
TEST(PoolImport, ATruncatedTraceAdoptsEachSegmentIntoItsPool) {
  const std::string trace = pool_trace("graphs_shared_pool.truncated");
  TraceReader reader(trace);
  EXPECT_TRUE(reader.header().starts_mid_run());
  ASSERT_EQ(reader.header().pools_size(), 1);
  const auto events = all_events(trace);
  TraceValidator validator(100, true);
  validator.add(events, 0);
  EXPECT_EQ(validator.problem_count(), 0u);
  uint64_t adopted_private = 0;
  for (const Event& e : events)
    adopted_private += e.has_flag(kPreexisting) && e.kind == EventKind::segment_alloc && e.pool != kDefaultPool;
  EXPECT_GT(adopted_private, 0u);

  const json live = read_json(pool_data("graphs_shared_pool.live.json"));
  ReplayOptions request;
  request.trace_path = trace;
  const ReplayMetrics m = run_replay(request);
  EXPECT_EQ(m.reserved_peak, live["max_memory_reserved"].get<uint64_t>());
  EXPECT_EQ(m.preexisting_segments, 10u);
  EXPECT_EQ(m.device_alloc_calls, 10u + 12u);  // the adopted segments, then the kept entries' own
  EXPECT_EQ(m.device_free_calls, 0u);
}

// A CUDA graph used, destroyed, then empty_cache: PyTorch gives its pool's segments back only
// then (a second graph's new pool follows). memreplay.torch's trace knows the freed segments'
// pool, and the replay releases the pool there (without that: 201,326,592 bytes and 6 frees); the
// snapshot's import gives segments freed before the snapshot the default pool, which empty_cache
// releases the same way. Both replay to the job's own stats.
TEST(PoolLiveRun, AReleasedGraphPoolGivesItsSegmentsBack) {
  for (const auto& [trace, stats] :
       {std::pair{pool_data("live/graph_release.live.mrt").string(), pool_data("live/graph_release.mrtlive.json")},
        std::pair{pool_trace("graph_release"), pool_data("graph_release.live.json")}}) {
    const json live = read_json(stats);
    ReplayOptions request;
    request.trace_path = trace;
    const ReplayMetrics m = run_replay(request);
    SCOPED_TRACE(trace);
    testing::expect_equals_live_run(m, live, false);
    EXPECT_EQ(m.device_free_calls, 7u);
  }
}

// `info` counts what the snapshot recorded, action by action (the live run's trace counts).
TEST(PoolImport, InfoCountsEveryRecordedActionExactly) {
  for (const char* job : kJobs) {
    const json live = read_json(pool_data(std::string(job) + ".live.json"));
    TraceSummarizer summarizer;
    const auto events = all_events(pool_trace(job));
    summarizer.add(events, 0);
    summarizer.start_second_pass();
    summarizer.add(events, 0);
    const auto devices = summarizer.finish();
    ASSERT_EQ(devices.size(), 1u);
    std::map<std::string, uint64_t> expected = live["actions"].get<std::map<std::string, uint64_t>>();
    auto entries = devices[0].events_per_kind;
    entries.erase("annotation");  // the snapshot's external_annotations: recorded, but not trace entries
    EXPECT_EQ(entries, expected) << job;
  }
}

// `info` lists each pool with its kind and what it held. The expected figures come from the
// snapshots themselves, not from our import: tools/gpu/pool_summary_from_snapshot.py gives each
// segment_alloc the segment_pool_id of the final segment at its address (the default pool if the
// segment is freed later), each alloc the pool of the segment that holds it, and sums per pool.
// memreplay.torch's traces of the same jobs (separate runs, the pools named in annotations, each
// event's pool as the allocator saw it) hold exactly the same.
struct PoolFigures {
  uint64_t allocs, segments, peak_reserved, peak_requested;
};
struct JobPools {
  const char* job;
  const char* kind;  // of the one private pool
  uint64_t torch_first, torch_second;
  PoolFigures default_pool, private_pool;
};
constexpr JobPools kJobPools[] = {
    {"graphs_shared_pool", "graph", 1, 0, {197, 20, 385875968, 206069186}, {9, 3, 56623104, 56623104}},
    {"mempool_kv_cache", "mempool", 0, 1, {310, 4, 39845888, 37773312}, {120, 3, 25165824, 5062656}},
    {"graphed_callables", "mempool", 0, 1, {164, 9, 117440512, 95713280}, {13, 6, 94371840, 78129152}},
    {"compile_reduce_overhead", "mempool", 0, 1, {127, 4, 27262976, 4464700}, {117, 3, 98566144, 96993280}},
};

void expect_pool(const DeviceSummary& device, uint32_t pool, const PoolFigures& want) {
  ASSERT_TRUE(device.pools.contains(pool)) << "pool " << pool;
  const DeviceSummary::Pool& got = device.pools.at(pool);
  EXPECT_EQ(got.allocs, want.allocs) << "pool " << pool;
  EXPECT_EQ(got.segments, want.segments) << "pool " << pool;
  EXPECT_EQ(got.peak_reserved_bytes, want.peak_reserved) << "pool " << pool;
  EXPECT_EQ(got.peak_requested_bytes, want.peak_requested) << "pool " << pool;
}

TEST(PoolInfo, ListsEachPoolWithItsKindAndWhatItHeld) {
  for (const JobPools& j : kJobPools)
    for (const std::string& trace :
         {pool_trace(j.job), pool_data(std::string("live/") + j.job + ".live.mrt").string()}) {
      SCOPED_TRACE(trace);
      TraceReader reader(trace);
      const TraceSummary summary = summarize_trace(reader);
      ASSERT_EQ(summary.pools.size(), 1u);
      const PoolName& pool = summary.pools[0];
      EXPECT_EQ(pool.kind, j.kind);
      EXPECT_EQ(pool.torch_id_first, j.torch_first);
      EXPECT_EQ(pool.torch_id_second, j.torch_second);
      ASSERT_EQ(summary.devices.size(), 1u);
      EXPECT_EQ(summary.devices[0].pools.size(), 2u);
      expect_pool(summary.devices[0], kDefaultPool, j.default_pool);
      expect_pool(summary.devices[0], pool.id, j.private_pool);
    }
}

// The same through the CLI, table and --json, on a live trace (whose header names no pool).
TEST(PoolInfo, TheCliListsALiveTracesPools) {
  const auto dir = fs::temp_directory_path() / ("memreplay-poolinfo-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string trace = pool_data("live/mempool_kv_cache.live.mrt").string();
  const auto json_run = testing::run_memreplay("info --json - " + trace, dir);
  ASSERT_EQ(json_run.status, 0) << json_run.err;
  const json info = json::parse(json_run.out);
  ASSERT_EQ(info["pools"].size(), 1u);
  EXPECT_EQ(info["pools"][0]["kind"], "mempool");
  EXPECT_EQ(info["pools"][0]["torch_id"], json::array({0, 1}));
  const std::string id = std::to_string(info["pools"][0]["id"].get<unsigned>());
  const json& pools = info["devices"][0]["pools"];
  EXPECT_EQ(pools[id]["allocs"], 120);
  EXPECT_TRUE(pools[id]["captured_allocs"].is_null());  // recorded before captures were flagged
  EXPECT_FALSE(info["captures_flagged"].get<bool>());
  EXPECT_EQ(pools[id]["segments"], 3);
  EXPECT_EQ(pools[id]["peak_reserved_bytes"], 25165824);
  EXPECT_EQ(pools[id]["peak_requested_bytes"], 5062656);
  EXPECT_EQ(pools["0"]["allocs"], 310);
  const auto table = testing::run_memreplay("info " + trace, dir);
  ASSERT_EQ(table.status, 0) << table.err;
  EXPECT_NE(table.out.find("private pool " + id + ": mempool, PyTorch id (0, 1)"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find(id + "    mempool             120    not recorded         3"), std::string::npos)
      << table.out;
  fs::remove_all(dir);
}

// What a snapshot cannot know, said: the segments of a graph pool released before the snapshot
// (graphs_pool_released: its first pool's graphs dropped and the cache emptied) are counted in the
// header, and info says so; a job whose pools all live at the snapshot, and a live trace, count none.
TEST(PoolInfo, SegmentsFreedBeforeTheSnapshotAreCountedAsOfUnknownPool) {
  const auto unknown_of = [](const std::string& trace) {
    TraceReader reader(trace);
    const proto::DeviceInfo& d = reader.header().devices(0);
    return std::pair(d.segments_of_unknown_pool(), d.allocations_of_unknown_pool());
  };
  // 24 device frees in the job: its released pool's segments and the eager segments the
  // empty_cache calls freed, none of them named by the snapshot.
  EXPECT_EQ(unknown_of(pool_trace("graphs_pool_released")), std::pair(uint64_t{24}, uint64_t{207}));
  EXPECT_EQ(unknown_of(pool_trace("graphs_eager_between")).first, 3u);
  EXPECT_EQ(unknown_of(pool_trace("mempool_kv_cache")), std::pair(uint64_t{0}, uint64_t{0}));
  EXPECT_EQ(unknown_of(pool_data("live/graphs_pool_released.live.mrt").string()), std::pair(uint64_t{0}, uint64_t{0}));

  const auto dir = fs::temp_directory_path() / ("memreplay-poolunknown-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string snapshot = pool_data("graphs_pool_released.pickle.xz").string();
  const auto json_run = testing::run_memreplay("info --json - " + snapshot, dir);
  ASSERT_EQ(json_run.status, 0) << json_run.err;
  const json unknown = json::parse(json_run.out)["devices"][0]["pool_unknown"];
  EXPECT_EQ(unknown["segments"], 24);
  EXPECT_EQ(unknown["allocations"], 207);
  const auto table = testing::run_memreplay("info " + snapshot, dir);
  ASSERT_EQ(table.status, 0) << table.err;
  EXPECT_NE(table.out.find("pool unknown: 24 segments freed before the snapshot was taken, holding 207 allocations"),
            std::string::npos)
      << table.out;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace memreplay
