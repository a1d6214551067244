// The star (results/recommendation.h) weighs both costs: compare, compare --policy all and the
// report never star a policy that buys its reserved peak with many times the current setting's
// device calls (passthrough: 35,283 on gpt2_train against pytorch's 137), they say the rule, and a
// single replay stars nothing.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/support/cli_run.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

nlohmann::json json_of(const std::string& arguments) {
  const auto r = testing::run_memreplay(arguments);
  EXPECT_EQ(r.status, 0) << arguments << "\n" << r.out;
  return nlohmann::json::parse(r.out);
}

TEST(StarRule, CompareDoesNotStarAPolicyThatMakesFarMoreDeviceCalls) {
  for (const char* name : {"gpt2_train.default", "gpt2_generate.default"}) {
    SCOPED_TRACE(name);
    const std::string trace = testing::imported_trace(name);
    const auto three = json_of("compare " + trace +
                               " --policy pytorch --policy pytorch:expandable_segments:True --policy passthrough "
                               "--json -");
    ASSERT_TRUE(three["recommended"].is_string());
    EXPECT_NE(three["recommended"], "passthrough");
    EXPECT_EQ(three["results"][2]["standing"], "too_many_calls");
    EXPECT_EQ(three["call_rule"]["current_policy"], "pytorch");
    EXPECT_EQ(three["call_rule"]["reference_calls"], three["results"][0]["device_calls"]);

    const auto all = json_of("compare " + trace + " --policy all --json -");
    EXPECT_EQ(all["call_rule"]["current_policy"], "pytorch");
    ASSERT_TRUE(all["recommended"].is_string());
    EXPECT_NE(all["recommended"], "passthrough");
    // The star is the lowest reserved peak among those that qualify.
    uint64_t best = UINT64_MAX, starred = 0;
    for (const auto& r : all["results"]) {
      if (r["standing"] == "qualifies") best = std::min(best, r["reserved_peak"].get<uint64_t>());
      if (r["policy"] == all["recommended"]) starred = r["reserved_peak"];
    }
    EXPECT_EQ(starred, best);
  }
  // The table says the rule under it, and the star is on the rule's row.
  const auto table = testing::run_memreplay("compare " + testing::imported_trace("gpt2_train.default") +
                                            " --policy pytorch --policy passthrough");
  EXPECT_NE(table.out.find("* pytorch "), std::string::npos) << table.out;
  EXPECT_EQ(table.out.find("* passthrough"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("*: the lowest reserved peak without OOM among the policies making at most 4x"),
            std::string::npos)
      << table.out;
}

TEST(StarRule, OneReplayStarsNothing) {
  const std::string trace = testing::imported_trace("gpt2_train.default");
  EXPECT_TRUE(json_of("compare " + trace + " --policy passthrough --json -")["recommended"].is_null());
  const auto table = testing::run_memreplay("compare " + trace + " --policy passthrough");
  EXPECT_EQ(table.out.find("* passthrough"), std::string::npos) << table.out;
  EXPECT_EQ(table.out.find("*: "), std::string::npos) << table.out;
}

class StarRuleReport : public testing::TempDirTest {};

TEST_F(StarRuleReport, TheReportStarsWhatCompareStars) {
  const std::string trace = testing::imported_trace("gpt2_train.default");
  const std::string policies = " --policy pytorch --policy pytorch:expandable_segments:True --policy passthrough";
  const auto compare = json_of("compare " + trace + policies + " --json -");
  const auto report = json_of("report " + trace + policies + " -o " + path("r.html") + " --json -");
  for (const auto& p : report["policies"])
    EXPECT_EQ(p["starred"].get<bool>(), p["policy"] == compare["recommended"]) << p["policy"];
  EXPECT_NE(report["star_rule"].get<std::string>().find("at most 4x the device calls of pytorch"), std::string::npos);
}

}  // namespace
}  // namespace memreplay
