// advise under a cap, and its capacity search against fit's:
//   - at a cap the current setting runs out of memory in, that OOM is the first finding, it names
//     a setting that fits there, and the current setting's smallest fit is searched;
//   - a setting that fits outranks every one that does not;
//   - advise and fit name the same smallest capacity (one search, one resolution), and print the
//     fitting and the failing capacity so that they never read the same.
#include <gtest/gtest.h>

#include <regex>

#include <nlohmann/json.hpp>

#include "base/units.h"
#include "replayer/replay_runner.h"
#include "results/advice.h"
#include "tests/support/cli_run.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

constexpr uint64_t kCap = 7'945'689'498;  // 7.4 GiB: gpt2_train's pytorch default needs 7.52 GiB

bool fits_at(const std::string& trace, const std::string& policy, uint64_t capacity) {
  ReplayOptions o;
  o.trace_path = trace;
  o.policy_spec = policy;
  o.capacity = capacity;
  return !run_replay(o).oom_at_event;
}

// At 7 GiB every setting tried runs out of memory on gpt2_train: they rank by what each needs
// (its smallest fit, each searched and checked by replays at it and 1 MiB below), not by a
// reserved peak cut short at the OOM, and the finding names the one that needs the least.
TEST(AdviceUnderACap, SettingsThatAllRunOutRankByTheirSmallestFit) {
  const std::string trace = testing::imported_trace("gpt2_train.stacks");
  constexpr uint64_t kTight = 7 * kGiB;
  ReplayOptions base;
  base.trace_path = trace;
  base.capacity = kTight;
  const results::Advice a = results::advise(base, "pytorch", true);
  ASSERT_TRUE(a.current.metrics.oom_at_event.has_value());
  uint64_t previous = 0;
  const results::CandidateResult* least = nullptr;
  for (const auto& c : a.candidates) {
    ASSERT_TRUE(c.metrics.oom_at_event.has_value()) << c.policy << " fits at 7 GiB";
    ASSERT_TRUE(c.fit.has_value()) << c.policy << ": an OOM'd setting's need is searched";
    EXPECT_GE(c.fit->smallest_fit_bytes, previous) << c.policy << " ranked after a setting that needs more";
    previous = c.fit->smallest_fit_bytes;
    EXPECT_TRUE(fits_at(trace, c.policy, c.fit->smallest_fit_bytes)) << c.policy;
    if (c.fit->monotonic) EXPECT_FALSE(fits_at(trace, c.policy, c.fit->smallest_fit_bytes - kMiB)) << c.policy;
    if (!least) least = &c;
  }
  ASSERT_NE(least, nullptr);
  ASSERT_FALSE(a.items.empty());
  EXPECT_EQ(a.items[0].title, "Out of memory at 7.00 GiB, and no setting tried fits there");
  EXPECT_NE(a.items[0].evidence.find("Of those, " + least->paste + " needs the least; fits in "), std::string::npos)
      << a.items[0].evidence;
}

TEST(AdviceUnderACap, TheCurrentSettingsOomComesFirstWithASettingThatFits) {
  const std::string trace = testing::imported_trace("gpt2_train.stacks");
  ReplayOptions base;
  base.trace_path = trace;
  base.capacity = kCap;
  const results::Advice a = results::advise(base, "pytorch", true);
  ASSERT_TRUE(a.current.metrics.oom_at_event.has_value());
  ASSERT_FALSE(a.items.empty()) << "an OOM is never 'nothing to change'";
  EXPECT_EQ(a.items[0].title.rfind("Out of memory at 7.40 GiB: set ", 0), 0u) << a.items[0].title;
  ASSERT_FALSE(a.items[0].policy.empty());
  EXPECT_TRUE(fits_at(trace, a.items[0].policy, kCap)) << a.items[0].policy;
  EXPECT_EQ(a.recommended, a.items[0].policy);
  // The current setting's smallest fit is searched (not "?"), and is above the cap.
  ASSERT_TRUE(a.current.fit.has_value());
  EXPECT_GT(a.current.fit->smallest_fit_bytes, kCap);
  EXPECT_TRUE(fits_at(trace, "pytorch", a.current.fit->smallest_fit_bytes));
  // Fitting candidates first.
  bool seen_oom = false;
  for (const auto& c : a.candidates) {
    seen_oom = seen_oom || c.metrics.oom_at_event.has_value();
    if (seen_oom) EXPECT_TRUE(c.metrics.oom_at_event.has_value()) << c.policy << " fits, ranked after an OOM";
  }
  const auto text = results::advice_text(a, {});
  EXPECT_EQ(text.find("Nothing to change"), std::string::npos) << text;
  const auto j = results::advice_json(a, {});
  EXPECT_TRUE(j["current"]["oom"].get<bool>());
  EXPECT_FALSE(j["current"]["smallest_fit_bytes"].is_null());
  EXPECT_EQ(j["capacity"], kCap);
}

TEST(AdviceAndFit, NameTheSameSmallestCapacity) {
  // gpt2_generate with expandable segments: 1,073,987,020 bytes from advise, 1,082,443,175 from fit
  // when each searched its own way.
  const std::string trace = testing::imported_trace("gpt2_generate.default");
  const auto fit = testing::run_memreplay("fit " + trace + " --policy pytorch:expandable_segments:True --json -");
  ASSERT_EQ(fit.status, 0) << fit.out;
  const auto f = nlohmann::json::parse(fit.out);
  const auto advise = testing::run_memreplay("advise " + trace + " --policy pytorch:expandable_segments:True --json -");
  ASSERT_EQ(advise.status, 0) << advise.out;
  const auto a = nlohmann::json::parse(advise.out);
  EXPECT_EQ(a["current"]["fit"]["smallest_fit_bytes"], f["min_fit_bytes"]);
  EXPECT_EQ(a["current"]["fit"]["fails_at_bytes"], f["fails_at_bytes"]);
  EXPECT_EQ(a["current"]["fit"]["resolution_bytes"], f["resolution_bytes"]);
  EXPECT_EQ(a["fit_resolution_bytes"], 1u << 20);
  EXPECT_EQ(f["fails_at_bytes"].get<uint64_t>(), f["min_fit_bytes"].get<uint64_t>() - (1u << 20));
}

TEST(AdviceAndFit, TheFittingAndTheFailingCapacityNeverReadTheSame) {
  const auto [a, b] = format_bytes_apart(8'074'035'200, 8'074'035'200 - (1u << 20));
  EXPECT_NE(a, b);
  const auto [c, d] = format_bytes_apart(8'074'035'200, 8'074'035'199);
  EXPECT_NE(c, d);
  const auto [e, f] = format_bytes_apart(1'073'987'020, 1'082'443'175);
  EXPECT_EQ(e, "1.00 GiB");
  EXPECT_EQ(f, "1.01 GiB");

  const std::string trace = testing::imported_trace("gpt2_train.default");
  const auto r = testing::run_memreplay("fit " + trace + " --policy pytorch");
  ASSERT_EQ(r.status, 0) << r.out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("fits in ([0-9.]+ [KMG]iB) .*fails at ([0-9.]+ [KMG]iB)")))
      << r.out;
  EXPECT_NE(m[1].str(), m[2].str()) << r.out;
  EXPECT_NE(r.out.find("resolution 1.00 MiB"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace memreplay
