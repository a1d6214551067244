// Every verdict against a brute-force replay of what it claims, on every real trace and at caps
// around the pytorch default's reserved peak R (0.9 R, R, 1.1 R, 1.5 R; all but R not whole MiB):
//   - advise: its first setting fits when one tried fits, and has the lowest reserved peak among
//     the settings that fit and stay within the call rule; every setting it advises fits and stays
//     within the rule; a setting that fits is ranked before any that does not;
//   - compare (the library call its table stars from): the star is the plain rule's winner;
//   - fit: the capacity it names fits, and that minus the resolution does not.
// Each claim is checked by replaying the setting alone at that cap (run_replay), not by the
// one-pass replays the verdicts use.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "replayer/replay_runner.h"
#include "results/advice.h"
#include "results/fit_scan.h"
#include "results/recommendation.h"
#include "results/replay_batch.h"
#include "tests/support/cli_run.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

ReplayMetrics replay_at(const std::string& trace, const std::string& policy, std::optional<uint64_t> capacity,
                        bool ignore_empty_cache = false) {
  ReplayOptions o;
  o.trace_path = trace;
  o.policy_spec = policy;
  o.capacity = capacity;
  o.timeline_points = 1;
  if (ignore_empty_cache) return results::replay_lanes(o, {{policy, true}}).metrics.front();
  return run_replay(o);
}

bool fits(const ReplayMetrics& m) { return !m.oom_at_event; }

// Each setting replayed alone at one cap, once however many verdicts ask.
class Alone {
 public:
  Alone(std::string trace, uint64_t cap, const ReplayMetrics& pytorch_uncapped)
      : trace_(std::move(trace)), cap_(cap), pytorch_uncapped_(pytorch_uncapped) {}
  const ReplayMetrics& operator()(const std::string& policy) {
    const auto it = replays_.find(policy);
    return it != replays_.end() ? it->second : replays_[policy] = replay_at(trace_, policy, cap_);
  }
  // The rule, written out plainly: pytorch's device calls over the whole trace (its uncapped replay
  // when the capped one stopped at an OOM), at most 4x that, no OOM.
  uint64_t call_limit() {
    const ReplayMetrics& whole = fits((*this)("pytorch")) ? (*this)("pytorch") : pytorch_uncapped_;
    return static_cast<uint64_t>(4.0 * double(std::max<uint64_t>(total_device_calls(whole), 1)));
  }
  bool qualifies(const ReplayMetrics& m) { return fits(m) && total_device_calls(m) <= call_limit(); }
  // The lowest reserved peak among `policies` that qualify, if any.
  std::optional<uint64_t> best_peak(const std::vector<std::string>& policies) {
    std::optional<uint64_t> best;
    for (const auto& p : policies)
      if (qualifies((*this)(p)) && (!best || (*this)(p).reserved_peak < *best)) best = (*this)(p).reserved_peak;
    return best;
  }
  const std::string& trace() const { return trace_; }
  uint64_t cap() const { return cap_; }

 private:
  std::string trace_;
  uint64_t cap_;
  const ReplayMetrics& pytorch_uncapped_;
  std::map<std::string, ReplayMetrics> replays_;
};

void check_advice(Alone& alone) {
  ReplayOptions base;
  base.trace_path = alone.trace();
  base.capacity = alone.cap();
  const results::Advice a = results::advise(base, "pytorch", false);
  std::vector<std::string> tried = {a.current.policy};
  for (const auto& c : a.candidates) tried.push_back(c.policy);
  EXPECT_EQ(fits(alone("pytorch")), fits(a.current.metrics));
  for (const auto& c : a.candidates) EXPECT_EQ(fits(alone(c.policy)), fits(c.metrics)) << c.policy;
  EXPECT_EQ(a.call_rule.call_limit(), alone.call_limit());
  const std::optional<uint64_t> best = alone.best_peak(tried);

  // The recommendation, and the first setting the items name (the OOM item names it when the
  // current setting does not fit; the empty_cache() item has its own lanes, checked below).
  ASSERT_EQ(a.recommended.has_value(), best.has_value());
  if (best) {
    EXPECT_TRUE(alone.qualifies(alone(*a.recommended))) << *a.recommended;
    EXPECT_EQ(alone(*a.recommended).reserved_peak, *best) << *a.recommended;
  }
  const results::AdviceItem* first_setting = nullptr;
  for (const auto& item : a.items) {
    if (item.title.starts_with("empty_cache()")) {
      if (!item.policy.empty())
        EXPECT_TRUE(alone.qualifies(replay_at(alone.trace(), item.policy, alone.cap(), true))) << item.title;
      continue;
    }
    if (item.policy.empty() || item.title.starts_with("A large gap")) continue;
    if (!first_setting) first_setting = &item;
    EXPECT_TRUE(alone.qualifies(alone(item.policy)))
        << "advised but does not fit or makes too many calls: " << item.title;
  }
  if (!fits(alone("pytorch"))) {
    ASSERT_FALSE(a.items.empty());
    EXPECT_TRUE(a.items[0].title.starts_with("Out of memory")) << a.items[0].title;
    EXPECT_EQ(a.items[0].policy, best ? *a.recommended : "");
  } else if (best && *best < alone("pytorch").reserved_peak) {
    ASSERT_NE(first_setting, nullptr);
    EXPECT_EQ(alone(first_setting->policy).reserved_peak, *best) << first_setting->title;
  } else if (first_setting) {
    EXPECT_FALSE(first_setting->title.starts_with("Lower the reserved peak")) << first_setting->title;
  }
  // A candidate that fits is ranked before any that does not.
  bool seen_oom = false;
  for (const auto& c : a.candidates) {
    if (!fits(alone(c.policy))) seen_oom = true;
    if (seen_oom) EXPECT_FALSE(fits(alone(c.policy))) << c.policy << " fits but is ranked after an OOM";
  }
}

void check_compare(Alone& alone) {
  const std::vector<std::string> specs = {
      "pytorch", "pytorch:expandable_segments:True", "passthrough", "cuda_async", "memreplay", "gmlake", "rmm_pool"};
  std::vector<ReplayMetrics> rows;
  for (const auto& spec : specs) rows.push_back(alone(spec));
  ReplayOptions base;
  base.trace_path = alone.trace();
  base.capacity = alone.cap();
  const results::Recommendation star = results::recommend(rows, results::call_rule_for(base, "pytorch", rows[0]));
  const std::optional<uint64_t> best = alone.best_peak(specs);
  ASSERT_EQ(star.best.has_value(), best.has_value());
  if (!best) return;
  EXPECT_TRUE(alone.qualifies(rows[*star.best])) << specs[*star.best];
  EXPECT_EQ(rows[*star.best].reserved_peak, *best) << specs[*star.best];
  EXPECT_NE(specs[*star.best], "passthrough");
  EXPECT_FALSE(results::recommend({rows[*star.best]}, star.rule).best.has_value()) << "one replay: no star";
}

void check_fit(const std::string& trace, const std::string& policy) {
  ReplayOptions o;
  o.trace_path = trace;
  o.policy_spec = policy;
  const results::FitScan scan = results::scan_min_capacity(o);
  EXPECT_EQ(scan.resolution_bytes, uint64_t{1} << 20);
  EXPECT_TRUE(fits(replay_at(trace, policy, scan.smallest_fit_bytes))) << policy << " " << scan.smallest_fit_bytes;
  EXPECT_FALSE(fits(replay_at(trace, policy, scan.fails_below_smallest_bytes))) << policy;
  if (scan.monotonic) {
    EXPECT_EQ(scan.fails_below_smallest_bytes, scan.smallest_fit_bytes - scan.resolution_bytes) << policy;
    return;
  }
  EXPECT_TRUE(fits(replay_at(trace, policy, scan.fits_above_bytes))) << policy;
  EXPECT_FALSE(fits(replay_at(trace, policy, scan.fails_below_above_bytes))) << policy;
  EXPECT_LE(scan.fits_above_bytes - scan.fails_below_above_bytes, scan.resolution_bytes);
}

TEST(VerdictBruteForce, AdviseCompareAndFitOnEveryRealTraceAtCapsAroundThePytorchPeak) {
  testing::real_data_path("traces");
  const auto names = testing::real_data_names("traces", ".pickle.xz");
  ASSERT_GE(names.size(), 9u);
  for (const auto& name : names) {
    SCOPED_TRACE(name);
    const std::string trace = testing::imported_trace(name);
    const ReplayMetrics uncapped = replay_at(trace, "pytorch", std::nullopt);
    const uint64_t peak = uncapped.reserved_peak;
    for (const double factor : {0.9, 1.0, 1.1, 1.5}) {
      // R itself, and the others odd: no whole number of MiB.
      const uint64_t cap = factor == 1.0 ? peak : static_cast<uint64_t>(double(peak) * factor) | 1;
      SCOPED_TRACE("capacity " + std::to_string(cap));
      Alone alone(trace, cap, uncapped);
      check_advice(alone);
      check_compare(alone);
    }
    check_fit(trace, "pytorch");
    check_fit(trace, "pytorch:expandable_segments:True");
  }
}

// The same verdicts through the CLI: what it prints as JSON is what the library decided.
TEST(VerdictBruteForce, CliAdviseAndCompareAtACapAgreeWithReplaysAlone) {
  const std::string trace = testing::imported_trace("gpt2_train.stacks");
  const uint64_t cap = 7'945'689'498;  // 7.4 GiB: pytorch runs out, expandable segments fit
  const auto advise = testing::run_memreplay("advise " + trace + " --capacity 7945689498B --no-fit --json -");
  ASSERT_EQ(advise.status, 0) << advise.out;
  const auto a = nlohmann::json::parse(advise.out);
  EXPECT_TRUE(a["current"]["oom"].get<bool>());
  ASSERT_FALSE(a["items"].empty());
  const std::string first = a["items"][0]["policy"];
  EXPECT_TRUE(fits(replay_at(trace, first, cap))) << first;
  EXPECT_EQ(a["recommended"], first);

  const auto compare = testing::run_memreplay("compare " + trace +
                                              " --policy pytorch --policy pytorch:expandable_segments:True "
                                              "--policy passthrough --capacity 7945689498B --json -");
  ASSERT_EQ(compare.status, 0) << compare.out;
  const auto c = nlohmann::json::parse(compare.out);
  EXPECT_EQ(c["recommended"], "pytorch:expandable_segments:True");
  EXPECT_EQ(c["results"][2]["standing"], "too_many_calls");
}

}  // namespace
}  // namespace memreplay
