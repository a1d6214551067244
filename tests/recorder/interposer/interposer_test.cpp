// The CUDA interposer, without a GPU: tests/fake_cuda/fake_cuda_app runs against a fake libcudart
// and libcuda with the interposer preloaded, through every path a real program reaches CUDA by
// (PLT calls, dlsym on the library, cuGetProcAddress, a runtime that reaches the driver only
// through cuGetProcAddress), and the trace must hold exactly its calls.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "proto/trace_reader.h"
#include "recorder/interposer/child_command.h"
#include "replayer/replay_runner.h"
#include "replayer/trace_summary.h"
#include "replayer/trace_validator.h"
#include "tests/support/test_support.h"

extern char** environ;

namespace memreplay {
namespace {

namespace fs = std::filesystem;

#if defined(MEMREPLAY_INTERPOSER_LIB) && defined(MEMREPLAY_FAKE_CUDA_APP)

struct Result {
  int status = -1;
  std::string out, err;
  bool ok() const { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }
};

// Runs argv with extra environment variables; stderr is captured.
Result run(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env, const fs::path& dir) {
  const ChildCommand command(argv, env);

  const std::string out_path = (dir / "stdout.txt").string(), err_path = (dir / "stderr.txt").string();
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  Result result;
  pid_t pid = 0;
  if (posix_spawn(&pid, command.program(), &actions, nullptr, command.argv(), command.envp()) == 0)
    waitpid(pid, &result.status, 0);
  posix_spawn_file_actions_destroy(&actions);
  std::ifstream out(out_path), err(err_path);
  result.out.assign(std::istreambuf_iterator<char>(out), std::istreambuf_iterator<char>());
  result.err.assign(std::istreambuf_iterator<char>(err), std::istreambuf_iterator<char>());
  return result;
}

class Interposer : public testing::TempDirTest {
 protected:
  Result run_app(const std::string& output, std::map<std::string, std::string> env = {}, int threads = 4,
                 int pairs = 100) {
    env["LD_PRELOAD"] = MEMREPLAY_INTERPOSER_LIB;
    // In a sanitizer build the app carries ASan, which wants to be loaded first.
    const char* asan = std::getenv("ASAN_OPTIONS");
    env["ASAN_OPTIONS"] = std::string(asan ? asan : "") + (asan && *asan ? ":" : "") + "verify_asan_link_order=0";
    env["MEMREPLAY_OUTPUT"] = output;
    env["MEMREPLAY_QUIET"] = "1";
    return run({MEMREPLAY_FAKE_CUDA_APP, std::to_string(threads), std::to_string(pairs)}, env, dir_);
  }
};

struct Traced {
  std::vector<Event> events;
  std::vector<std::vector<FrameText>> stacks;  // per event
};

Traced read_trace(const std::string& path) {
  TraceReader reader(path);
  Traced t;
  std::vector<Event> batch;
  while (reader.next_batch(batch))
    for (const Event& e : batch) {
      t.events.push_back(e);
      t.stacks.push_back(reader.stack_frames(e.stack));
    }
  return t;
}

// The app's fixed sequence (fake_cuda_app.cpp, calls 1-23), before its threads.
struct Expected {
  EventKind kind;
  const char* api;
};
const std::vector<Expected> kSequence = {
    {EventKind::segment_alloc, "cudaMalloc"},
    {EventKind::segment_alloc, "cudaMalloc"},
    {EventKind::stream_create, "cudaStreamCreate"},
    {EventKind::alloc, "cudaMallocAsync"},
    {EventKind::event_record, "cudaEventRecord"},
    {EventKind::stream_wait_event, "cudaStreamWaitEvent"},
    {EventKind::free_completed, "cudaFreeAsync"},
    {EventKind::synchronize, "cudaStreamSynchronize"},
    {EventKind::synchronize, "cudaEventSynchronize"},
    {EventKind::synchronize, "cudaDeviceSynchronize"},
    {EventKind::segment_free, "cudaFree"},
    {EventKind::stream_destroy, "cudaStreamDestroy"},
    {EventKind::segment_alloc, "cuMemAlloc_v2"},
    {EventKind::segment_free, "cuMemFree_v2"},
    {EventKind::segment_alloc, "cuMemAlloc_v2"},
    {EventKind::address_reserve, "cuMemAddressReserve"},
    {EventKind::physical_alloc, "cuMemCreate"},
    {EventKind::segment_map, "cuMemMap"},
    {EventKind::segment_unmap, "cuMemUnmap"},
    {EventKind::physical_free, "cuMemRelease"},
    {EventKind::address_free, "cuMemAddressFree"},
    {EventKind::segment_free, "cuMemFree_v2"},
    {EventKind::synchronize, "cuStreamSynchronize_ptsz"},
};

TEST_F(Interposer, RecordsEveryCallOnceThroughEveryPath) {
  const Result r = run_app(path("t.mrt"));
  ASSERT_TRUE(r.ok()) << r.err;
  TraceReader reader(path("t.mrt"));
  EXPECT_TRUE(reader.complete());  // finished at exit
  EXPECT_EQ(reader.header().source(), "cuda-interposer");
  ASSERT_EQ(reader.header().devices_size(), 1);
  EXPECT_EQ(reader.header().devices(0).name(), "Fake GPU");
  EXPECT_EQ(reader.header().devices(0).total_memory(), 80ull << 30);
  EXPECT_NE(reader.header().command_line().find("memreplay_fake_cuda_app"), std::string::npos);

  const Traced t = read_trace(path("t.mrt"));
  ASSERT_EQ(t.events.size(), kSequence.size() + 4 * 100 * 2);  // nothing doubled, nothing lost
  for (size_t i = 0; i < kSequence.size(); ++i) {
    SCOPED_TRACE("event " + std::to_string(i) + " " + kSequence[i].api);
    EXPECT_EQ(t.events[i].kind, kSequence[i].kind);
    ASSERT_EQ(t.stacks[i].size(), 3u);
    EXPECT_EQ(t.stacks[i][0].name, kSequence[i].api);
    EXPECT_NE(t.stacks[i][2].name.find("thread "), std::string::npos);
  }
  // The callers: the app itself for its own calls.
  EXPECT_NE(t.stacks[0][1].filename.find("memreplay_fake_cuda_app"), std::string::npos) << t.stacks[0][1].filename;
  EXPECT_EQ(t.stacks[0][0].filename, "<cuda runtime>");
  EXPECT_EQ(t.stacks[12][0].filename, "<cuda driver>");

  const auto& e = t.events;
  EXPECT_EQ(e[0].size, 1000u);
  EXPECT_NE(e[0].address, 0u);
  EXPECT_TRUE(e[1].has_flag(kFailed));  // out of memory: cudaErrorMemoryAllocation in aux
  EXPECT_EQ(e[1].aux, 2u);
  EXPECT_EQ(e[1].size, 1ull << 41);
  const uint64_t stream = e[2].stream;
  EXPECT_NE(stream, 0u);
  EXPECT_EQ(e[3].stream, stream);
  EXPECT_EQ(e[3].size, 512u);
  EXPECT_EQ(e[4].stream, stream);
  EXPECT_EQ(e[4].aux, 0xe0e0u);
  EXPECT_EQ(e[5].stream, 0u);
  EXPECT_EQ(e[5].aux, 0xe0e0u);
  EXPECT_EQ(e[6].address, e[3].address);
  EXPECT_EQ(e[6].size, 512u);  // filled from the allocation
  EXPECT_EQ(e[7].stream, stream);
  EXPECT_EQ(e[8].aux, 0xe0e0u);
  EXPECT_EQ(e[10].address, e[0].address);
  EXPECT_EQ(e[10].size, 1000u);
  EXPECT_EQ(e[11].stream, stream);
  EXPECT_EQ(e[13].size, 2048u);
  EXPECT_EQ(e[15].size, 8u << 20);  // address_reserve
  EXPECT_EQ(e[16].size, 2u << 20);  // physical_alloc
  EXPECT_EQ(e[17].address, e[15].address);
  EXPECT_EQ(e[17].aux, e[16].aux);  // mapped the handle created
  EXPECT_EQ(e[19].aux, e[16].aux);
  EXPECT_EQ(e[19].size, 2u << 20);  // physical_free: size from cuMemCreate
  EXPECT_EQ(e[21].address, e[14].address);
  EXPECT_EQ(e[21].size, 4096u);

  // The threads: each one's cudaMalloc/cudaFree pairs in its own order.
  std::map<std::string, std::vector<const Event*>> by_thread;
  for (size_t i = kSequence.size(); i < e.size(); ++i) by_thread[t.stacks[i][2].name].push_back(&e[i]);
  EXPECT_EQ(by_thread.size(), 4u);
  for (const auto& [thread, events] : by_thread) {
    ASSERT_EQ(events.size(), 200u) << thread;
    for (size_t k = 0; k < events.size(); k += 2) {
      EXPECT_EQ(events[k]->kind, EventKind::segment_alloc);
      EXPECT_EQ(events[k + 1]->kind, EventKind::segment_free);
      EXPECT_EQ(events[k + 1]->address, events[k]->address);
      EXPECT_EQ(events[k + 1]->size, events[k]->size);
    }
  }
}

TEST_F(Interposer, MallocsCanBeRecordedAsTheProgramsAllocations) {
  const Result r = run_app(path("t.mrt"), {{"MEMREPLAY_MALLOC_EVENTS", "alloc"}}, 1, 1);
  ASSERT_TRUE(r.ok()) << r.err;
  const Traced t = read_trace(path("t.mrt"));
  ASSERT_GT(t.events.size(), 11u);
  EXPECT_EQ(t.events[0].kind, EventKind::alloc);
  EXPECT_EQ(t.events[10].kind, EventKind::free_completed);
  EXPECT_EQ(t.events[10].size, 1000u);
}

// A buffer mapped with cuMemCreate + cuMemMap (JAX's platform allocator) is the program's
// allocation too: the map at the reservation's start, the unmap its free, and the trace consistent.
TEST_F(Interposer, MapsCanBeRecordedAsTheProgramsAllocations) {
  const Result r = run_app(path("t.mrt"), {{"MEMREPLAY_MALLOC_EVENTS", "alloc"}}, 1, 1);
  ASSERT_TRUE(r.ok()) << r.err;
  const Traced t = read_trace(path("t.mrt"));
  ASSERT_GT(t.events.size(), 19u);
  const Event &reserve = t.events[15], &map = t.events[17], &unmap = t.events[18];
  ASSERT_EQ(t.stacks[17][0].name, "cuMemMap");
  ASSERT_EQ(t.stacks[18][0].name, "cuMemUnmap");
  EXPECT_EQ(reserve.kind, EventKind::address_reserve);
  EXPECT_EQ(map.kind, EventKind::alloc);
  EXPECT_EQ(map.address, reserve.address);
  EXPECT_EQ(map.size, 2u << 20);
  EXPECT_EQ(unmap.kind, EventKind::free_completed);
  EXPECT_EQ(unmap.address, map.address);
  EXPECT_EQ(unmap.size, map.size);
  TraceValidator validator;
  validator.add(TraceReader::read_all(path("t.mrt")), 0);
  EXPECT_EQ(validator.problem_count(), 0u) << (validator.problems().empty() ? "" : validator.problems()[0].message);
}

// The app's deliberately failing 2 TiB cudaMalloc, recorded as the program's allocation: flagged
// failed, and never live: info's peak is the real allocations', no policy runs out of
// memory on it, validate finds nothing wrong.
TEST_F(Interposer, AFailedMallocIsNeverReplayedAsALiveAllocation) {
  const Result r = run_app(path("t.mrt"), {{"MEMREPLAY_MALLOC_EVENTS", "alloc"}}, 1, 1);
  ASSERT_TRUE(r.ok()) << r.err;
  const auto events = TraceReader::read_all(path("t.mrt"));
  ASSERT_GT(events.size(), 2u);
  ASSERT_EQ(events[1].kind, EventKind::alloc);
  ASSERT_TRUE(events[1].has_flag(kFailed));
  ASSERT_EQ(events[1].size, 1ull << 41);
  TraceSummarizer summarizer;
  summarizer.add(events, 0);
  summarizer.start_second_pass();
  summarizer.add(events, 0);
  const auto devices = summarizer.finish();
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_LT(devices[0].peak_requested_bytes, 1ull << 30);
  EXPECT_EQ(devices[0].failed_per_kind.at("alloc"), 1u);
  TraceValidator validator;
  validator.add(events, 0);
  EXPECT_EQ(validator.problem_count(), 0u);
  for (const char* policy : {"pytorch", "passthrough", "cuda_async"}) {
    ReplayOptions request;
    request.trace_path = path("t.mrt");
    request.policy_spec = policy;
    const ReplayMetrics m = run_replay(request);
    EXPECT_FALSE(m.oom_at_event.has_value()) << policy;
    EXPECT_LT(m.requested_peak, 1ull << 30) << policy;
  }
}

TEST_F(Interposer, UnwritableOutputLeavesTheProgramUnharmed) {
  const Result r = run_app(path("no/such/dir/t.mrt"));
  EXPECT_TRUE(r.ok()) << r.err;
  EXPECT_NE(r.err.find("memreplay: cannot record CUDA calls to"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the program goes on unrecorded"), std::string::npos) << r.err;
}

TEST_F(Interposer, EachProcessOfARunGetsItsOwnFile) {
  { std::ofstream taken(path("t.mrt")); }  // as if another process of the run had claimed it
  const Result r = run_app(path("t.mrt"), {}, 1, 1);
  ASSERT_TRUE(r.ok()) << r.err;
  std::vector<fs::path> own;
  for (const auto& entry : fs::directory_iterator(dir_))
    if (entry.path().filename().string().starts_with("t.") && entry.path().filename() != "t.mrt")
      own.push_back(entry.path());
  ASSERT_EQ(own.size(), 1u);
  EXPECT_EQ(own[0].extension(), ".mrt");
  EXPECT_GT(TraceReader::read_all(own[0].string()).size(), 0u);
}

TEST_F(Interposer, WithoutAnOutputItOnlySaysSo) {
  const Result r = run({MEMREPLAY_FAKE_CUDA_APP, "1", "1"},
                       {{"LD_PRELOAD", MEMREPLAY_INTERPOSER_LIB}, {"ASAN_OPTIONS", "verify_asan_link_order=0"}}, dir_);
  EXPECT_TRUE(r.ok()) << r.err;
  EXPECT_NE(r.err.find("MEMREPLAY_OUTPUT is not set"), std::string::npos) << r.err;
}

#ifdef MEMREPLAY_CLI
TEST_F(Interposer, RecordCommandRunsTheProgramAndSummarizes) {
  const Result help = run({MEMREPLAY_CLI, "--help"}, {}, dir_);
  if (help.out.find("\n  record") == std::string::npos)
    GTEST_SKIP() << "`memreplay record` is not wired into tools/cli/main.cpp yet";
  const std::string summary = path("summary.json");
  const Result r = run({MEMREPLAY_CLI, "record", "-o", path("t.mrt"), "--interposer", MEMREPLAY_INTERPOSER_LIB,
                        "--summary-json", summary, "--", MEMREPLAY_FAKE_CUDA_APP, "2", "5"},
                       {{"ASAN_OPTIONS", "verify_asan_link_order=0"}}, dir_);
  ASSERT_TRUE(r.ok()) << r.err;
  EXPECT_EQ(read_trace(path("t.mrt")).events.size(), kSequence.size() + 2 * 5 * 2);
  std::ifstream in(summary);
  const std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(json.find("\"device_allocations\""), std::string::npos) << json;
  EXPECT_NE(json.find("memreplay_fake_cuda_app"), std::string::npos) << json;
}
#endif

#else

TEST(Interposer, NeedsTheCudaHeaders) { GTEST_SKIP() << "built without the CUDA toolkit: no interposer"; }

#endif

}  // namespace
}  // namespace memreplay
