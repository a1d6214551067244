// How every registered policy handles a per-process capacity, on real traces:
//   - from the smallest capacity `fit` finds upwards, at caps that are and are not whole MiB, a
//     policy that fits keeps fitting, unless the search itself said that fitting is not monotonic
//     there (then `fit` reports both answers rather than one bisected blindly);
//   - under a cap, a trace that starts mid-run (its starting state adopted) replays to the end or
//     to an OOM: never an internal error.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "policies/registry.h"
#include "proto/input_error.h"
#include "replayer/replay_runner.h"
#include "results/fit_scan.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

ReplayMetrics replay_at(const std::string& trace, const std::string& policy, uint64_t capacity) {
  ReplayOptions o;
  o.trace_path = trace;
  o.policy_spec = policy;
  o.capacity = capacity;
  o.timeline_points = 1;
  return run_replay(o);
}

// From the smallest fit S: S itself, a few bytes and a MiB and some odd bytes above it, 1%, 10%,
// 50%, 2x above, and just above the uncapped reserved peak.
std::vector<uint64_t> caps_from(const results::FitScan& scan) {
  const uint64_t s = scan.smallest_fit_bytes;
  return {s,
          s + 12'345,
          s + kMiB + 777,
          static_cast<uint64_t>(double(s) * 1.01) | 1,
          static_cast<uint64_t>(double(s) * 1.1) | 1,
          static_cast<uint64_t>(double(s) * 1.5) | 1,
          2 * s + 3,
          scan.uncapped.reserved_peak + 4'097};
}

TEST(CapacityContract, APolicyThatFitsKeepsFittingAboveItsSmallestFitOrFitSaysItIsNotMonotonic) {
  for (const char* name : {"vit_infer_varbatch.default", "multistream_pipeline.default"}) {
    const std::string trace = testing::imported_trace(name);
    for (const PolicyInfo& info : PolicyRegistry::instance().policies()) {
      SCOPED_TRACE(std::string(name) + " " + info.name);
      ReplayOptions o;
      o.trace_path = trace;
      o.policy_spec = info.name;
      const results::FitScan scan = results::scan_min_capacity(o);
      // A policy that takes its arena from the cap fits near what the trace needs, not in the half
      // of the device it takes uncapped.
      EXPECT_LT(scan.smallest_fit_bytes, 4 * scan.uncapped.requested_peak) << info.name;
      for (const uint64_t cap : caps_from(scan)) {
        if (cap > scan.uncapped.device_memory) continue;
        const ReplayMetrics m = replay_at(trace, info.name, cap);
        if (m.oom_at_event)
          EXPECT_FALSE(scan.monotonic) << info.name << " fits at " << scan.smallest_fit_bytes << " but not at " << cap
                                       << ", and the search called fitting monotonic";
      }
    }
  }
}

TEST(CapacityContract, ATraceThatStartsMidRunUnderACapReplaysToTheEndOrToAnOom) {
  const std::string trace = testing::imported_trace("gpt2_train.truncated");
  const uint64_t cap = 7'274'181'427;  // 0.9 x pytorch's reserved peak: below what the starting state cached
  for (const PolicyInfo& info : PolicyRegistry::instance().policies())
    for (const std::string& options : info.contract_option_sets) {
      const std::string spec = options.empty() ? info.name : info.name + ":" + options;
      try {
        const ReplayMetrics m = replay_at(trace, spec, cap);
        EXPECT_TRUE(m.events > 0 || m.oom_at_event) << spec;
      } catch (const InputError&) {
        // the starting state itself does not fit: a clear message, allowed
      } catch (const std::exception& e) {
        ADD_FAILURE() << spec << ": " << e.what();
      }
    }
}

}  // namespace
}  // namespace memreplay
