// Every real trace × every registered policy with each of its contract option sets (and the
// max_split_size values people try) × several capacities, replayed to the end: each replay either
// completes (every event replayed) or stops at an OOM that names its event and request. No
// internal error, no InputError: the traces are real and consistent, so any exception is a bug in a
// policy or the engine (gpt2_train.truncated, which starts mid-run, once failed 15 of these with
// "the device refused the free of ..."). Capacities: none, and 1.02, 1.1 and 1.25 times the
// trace's requested peak. The replays run on every core.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "policies/registry.h"
#include "replayer/replay_runner.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

struct ScanCase {
  std::string trace;  // a real trace's name
  std::string policy;
  std::optional<uint64_t> capacity;
};

std::vector<std::string> policy_specs() {
  std::vector<std::string> specs;
  for (const PolicyInfo& info : PolicyRegistry::instance().policies()) {
    // The built-in policies: a plugin another test of this process loaded has its own contract.
    if (!info.plugin.empty()) continue;
    for (const std::string& options : info.contract_option_sets)
      specs.push_back(options.empty() ? info.name : info.name + ":" + options);
  }
  // What the truncated trace failed with: limits below the recorded run's segment sizes.
  specs.push_back("pytorch:max_split_size_mb:64");
  specs.push_back("pytorch:max_split_size_mb:256");
  return specs;
}

// "" when the replay is a complete result or a named OOM, else what is wrong with it.
std::string problem_of(const ScanCase& c, const std::string& path, uint64_t events) {
  ReplayOptions options;
  options.trace_path = path;
  options.policy_spec = c.policy;
  options.capacity = c.capacity;
  try {
    const ReplayMetrics m = run_replay(options);
    if (m.oom_at_event) return m.oom_request_bytes && m.oom_trace_event ? "" : "an OOM that names no request";
    if (m.events != events) return "stopped after " + std::to_string(m.events) + " of " + std::to_string(events);
    if (!m.complete()) return "incomplete";
    return "";
  } catch (const std::exception& e) {
    return std::string("threw: ") + e.what();
  }
}

TEST(RealTraceScan, EveryTracePolicyAndCapacityCompletesOrNamesItsOom) {
  const std::vector<std::string> traces = testing::real_data_names("traces", ".pickle.xz");
  ASSERT_EQ(traces.size(), 9u) << "*.pickle.xz in " << testing::real_data_path("traces");
  // Each trace's file, its alloc + free events, and its requested peak (the caps' unit).
  std::vector<std::string> paths;
  std::vector<uint64_t> events, requested_peaks;
  for (const std::string& trace : traces) {
    paths.push_back(testing::imported_trace(trace));
    ReplayOptions options;
    options.trace_path = paths.back();
    options.policy_spec = "passthrough";
    const ReplayMetrics m = run_replay(options);
    events.push_back(m.events);
    requested_peaks.push_back(m.requested_peak);
  }
  std::vector<ScanCase> cases;
  std::vector<size_t> trace_of;
  for (size_t t = 0; t < traces.size(); ++t)
    for (const std::string& policy : policy_specs())
      for (const double factor : {0.0, 1.02, 1.10, 1.25}) {
        std::optional<uint64_t> capacity;
        if (factor > 0) capacity = static_cast<uint64_t>(factor * static_cast<double>(requested_peaks[t]));
        cases.push_back({traces[t], policy, capacity});
        trace_of.push_back(t);
      }

  std::vector<std::string> problems(cases.size());
  std::atomic<size_t> next{0};
  const auto work = [&] {
    for (size_t i = next++; i < cases.size(); i = next++)
      problems[i] = problem_of(cases[i], paths[trace_of[i]], events[trace_of[i]]);
  };
  std::vector<std::thread> threads;
  for (unsigned n = std::max(1u, std::thread::hardware_concurrency()); n > 1; --n) threads.emplace_back(work);
  work();
  for (std::thread& thread : threads) thread.join();

  size_t failed = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    if (problems[i].empty()) continue;
    ++failed;
    ADD_FAILURE() << cases[i].trace << " × " << cases[i].policy << " × capacity "
                  << (cases[i].capacity ? std::to_string(*cases[i].capacity) : "none") << ": " << problems[i];
  }
  RecordProperty("replays", std::to_string(cases.size()));
  EXPECT_EQ(failed, 0u) << "of " << cases.size() << " replays";
}

// The replays that failed with "the device refused the free of ...": gpt2_train.truncated under
// max_split_size_mb:64 and caps between its requested peak and its reserved peak.
TEST(RealTraceScan, TheTruncatedTraceUnderMaxSplitSizeAndACapCompletesOrNamesItsOom) {
  const std::string path = testing::imported_trace("gpt2_train.truncated");
  for (const uint64_t mib : {7680, 8192, 8704}) {
    const std::string problem = problem_of({"gpt2_train.truncated", "pytorch:max_split_size_mb:64", mib << 20}, path,
                                           13108);  // its alloc + free_completed events
    EXPECT_EQ(problem, "") << mib << " MiB";
  }
}

}  // namespace
}  // namespace memreplay
