// The baseline is untrusted input (it comes with a pull request): every malformed one is bad
// input, exit 2 with one line naming the file, under 1 GiB of memory and 10 s, its error in the
// JUnit report (which parses as XML) and the Markdown. So are NaN and infinite limits on the
// command line. And twenty concurrent updates of one baseline lose no entry.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "tests/support/bounded_run.h"
#include "tests/support/cli_run.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

namespace fs = std::filesystem;
using testing::slurp;

class CheckHostileBaseline : public testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    trace_ = path("run.mrt");
    fs::copy_file(testing::imported_file(testing::source_dir() / "traces/multistream_pipeline.default.pickle.xz"),
                  trace_);
    baseline_ = path("baseline.json");
    const auto r = run("check " + trace_ + " --policy pytorch --baseline " + baseline_ + " --update-baseline");
    ASSERT_EQ(r.status, 0) << r.err;
    good_ = nlohmann::json::parse(slurp(baseline_));
  }
  // The CLI under 1 GiB of address space and 10 s, 60 under ASan (timeout exits 124).
  testing::CliRun run(const std::string& arguments) { return testing::run_memreplay_bounded(arguments, dir_); }
  void write(const std::string& text) {
    std::ofstream out(baseline_, std::ios::binary | std::ios::trunc);
    out << text;
  }
  // A check against the baseline as it is now: exit 2, one line naming the file and `expected`,
  // the same line as the JUnit report's one failing case.
  void expect_refused(const std::string& expected, const std::string& baseline_path = "") {
    const std::string baseline = baseline_path.empty() ? baseline_ : baseline_path;
    const auto r = run("check " + trace_ + " --policy pytorch --baseline " + baseline + " --junit " + path("j.xml") +
                       " --markdown " + path("m.md"));
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_EQ(r.err.rfind("memreplay: " + baseline + ": ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(expected), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
    EXPECT_LT(r.err.size(), 600u) << r.err;
    const auto junit = testing::run_shell(
        "python3 -c \"import sys, xml.etree.ElementTree as E; r = E.parse(sys.argv[1]).getroot(); "
        "f = r.findall('.//failure'); print(r.get('failures'), len(f), f[0].get('type'), f[0].get('message'))\" " +
        path("j.xml"));
    EXPECT_EQ(junit.status, 0) << junit.out;
    EXPECT_EQ(junit.out.rfind("1 1 bad-input " + baseline + ": ", 0), 0u) << junit.out;
    EXPECT_NE(slurp(path("m.md")).find("ERROR (bad input)"), std::string::npos);
    fs::remove(path("j.xml"));
  }
  std::string trace_, baseline_;
  nlohmann::json good_;
};

TEST_F(CheckHostileBaseline, DeepNestingIsRefusedWithItsByteOffset) {
  const std::string deep = std::string(50000, '[') + std::string(50000, ']');
  std::string text = good_.dump();
  const std::string version = "\"schema_version\":2";
  ASSERT_NE(text.find(version), std::string::npos) << text;
  text.replace(text.find(version), version.size(), "\"schema_version\":" + deep);
  write(text);
  expect_refused("nested deeper than 8 levels");
  auto j = good_;
  j["tolerances"]["reserved_peak"] = 0;
  text = j.dump();
  const std::string tolerance = "\"reserved_peak\":0";
  text.replace(text.find(tolerance), tolerance.size(), "\"reserved_peak\":" + deep);
  write(text);
  expect_refused("byte ");
}

TEST_F(CheckHostileBaseline, AnOversizedBaselineIsRefusedBeforeItIsRead) {
  write("");
  fs::resize_file(baseline_, 100u << 20);  // 100 MB, sparse
  expect_refused("byte 16777216: larger than 16.00 MiB (104857600 bytes)");
  // Just under the ceiling, as many entries as fit: read within the memory and time bounds.
  std::string text = "{\"schema\":\"memreplay-check-baseline\",\"schema_version\":2,\"capacity\":null,\"entries\":[";
  for (size_t i = 0; text.size() < (16u << 20) - 100; ++i)
    text += (i ? ",{\"trace\":\"t" : "{\"trace\":\"t") + std::to_string(i) + "\",\"policy\":\"p\",\"metrics\":{}}";
  write(text + "]}");
  const auto r = run("check " + trace_ + " --policy pytorch --baseline " + baseline_);
  EXPECT_EQ(r.status, 1) << r.err;  // read whole; this trace is new to it
  EXPECT_NE(r.err.find("NEW run pytorch"), std::string::npos) << r.err;
}

TEST_F(CheckHostileBaseline, NumbersOutOfRangeNegativeOrNotNumbersAreRefused) {
  std::string text = good_.dump();
  const std::string peak = "\"reserved_peak\":";
  const size_t at = text.find(peak) + peak.size();
  write(text.substr(0, at) + "1e400" + text.substr(text.find(',', at)));
  expect_refused("byte " + std::to_string(at) + ": the number 1e400 does not fit a double");
  write(text.substr(0, at) + "NaN" + text.substr(text.find(',', at)));
  expect_refused("not JSON");
  auto j = good_;
  j["tolerances"]["reserved_peak"] = -0.5;
  write(j.dump());
  expect_refused("tolerances.reserved_peak: a tolerance cannot be negative");
  j = good_;
  j["entries"][0]["metrics"]["reserved_peak"] = -1;
  write(j.dump());
  expect_refused("entries[0].metrics.reserved_peak: negative");
  j = good_;
  j["entries"][0]["metrics"]["oom"] = 0.5;
  write(j.dump());
  expect_refused("entries[0].metrics.oom: expected 0 (fits) or 1");
  j = good_;
  j["capacity"] = 18446744073709551616.0;  // past uint64: a double, not bytes
  write(j.dump());
  expect_refused("capacity: expected null or bytes");
  j = good_;
  j["entries"][0]["metrics"]["reserved_peak"] = "7GiB";
  write(j.dump());
  expect_refused("entries[0].metrics.reserved_peak: expected a number, got string");
}

TEST_F(CheckHostileBaseline, TheSchemaAndItsVersionAreReadExactly) {
  auto j = good_;
  j["schema"] = 5;
  write(j.dump());
  expect_refused("not a memreplay check baseline");
  j = good_;
  j["schema_version"] = 4294967297ull;  // 1 in its low 32 bits
  write(j.dump());
  expect_refused("baseline schema version 4294967297, this memreplay reads versions 1 to 2");
  j["schema_version"] = 1.0;
  write(j.dump());
  expect_refused("baseline schema version 1.0");
  j["schema_version"] = -1;
  write(j.dump());
  expect_refused("baseline schema version -1");
  j = good_;
  j["tolerence"] = nlohmann::json::object();  // a misspelt field would be ignored silently
  write(j.dump());
  expect_refused("unknown field 'tolerence'");
}

TEST_F(CheckHostileBaseline, NamesMustBeUtf8TextAndEntriesUnique) {
  std::string text = good_.dump();
  const std::string name = "\"trace\":\"run\"";
  const size_t at = text.find(name);
  ASSERT_NE(at, std::string::npos);
  write(text.substr(0, at) + "\"trace\":\"r\xff\xfeun\"" + text.substr(at + name.size()));
  expect_refused("byte " + std::to_string(at + 10) + ": not JSON");
  auto j = good_;
  j["entries"][0]["trace"] = "two\nlines";
  write(j.dump());
  expect_refused("entries[0].trace: the name 'two\\nlines' holds a control character");
  j = good_;
  j["entries"].push_back(j["entries"][0]);
  write(j.dump());
  expect_refused("entries[1]: a second entry for trace 'run' with policy 'pytorch'");
  // A trace file whose name is not UTF-8 cannot name an entry either (nor go into the reports).
  const std::string odd = path("r\xff.mrt");
  fs::copy_file(trace_, odd);
  const auto r = run("check " + odd + " --policy pytorch --max-overhead 10 --json " + path("odd.json"));
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("is not UTF-8 (name it with --name or NAME=PATH)"), std::string::npos) << r.err;
  EXPECT_NO_THROW(nlohmann::json::parse(slurp(path("odd.json"))));
  EXPECT_EQ(run("check ok=" + odd + " --policy pytorch --max-overhead 10").status, 0);
}

TEST_F(CheckHostileBaseline, ADirectoryOrAMissingFileIsRefused) {
  fs::create_directories(path("dir.json"));
  expect_refused("cannot read: a directory", path("dir.json"));
  expect_refused("cannot read: no such file", path("missing.json"));
  // An update may create a missing baseline, not write over a directory.
  const auto r = run("check " + trace_ + " --policy pytorch --baseline " + path("dir.json") + " --update-baseline");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_TRUE(fs::is_directory(path("dir.json")));
}

TEST_F(CheckHostileBaseline, NanAndInfiniteLimitsAreRefusedOnTheCommandLine) {
  for (const std::string flags :
       {"--tolerance reserved_peak=nan", "--tolerance reserved_peak=inf", "--tolerance reserved_peak=-1%",
        "--tolerance reserved_peak=0x10", "--max-overhead nan", "--max-overhead inf", "--max-overhead 0.5"}) {
    const auto r = run("check " + trace_ + " --policy pytorch --baseline " + baseline_ + " " + flags + " --junit " +
                       path("j.xml"));
    EXPECT_EQ(r.status, 2) << flags << ": " << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
    EXPECT_NE(slurp(path("j.xml")).find("type=\"bad-input\""), std::string::npos) << flags;
  }
}

TEST_F(CheckHostileBaseline, ReportsAreWrittenForEveryBadInput) {
  // A trace that is not there (an artifact that did not download) and an unknown flag.
  for (const std::string arguments :
       {"check " + path("missing.mrt") + " --policy pytorch --baseline " + baseline_,
        "check " + trace_ + " --policy pytorch --baseline " + baseline_ + " --no-such-flag"}) {
    const auto r = run(arguments + " --junit " + path("j.xml") + " --markdown " + path("m.md"));
    EXPECT_EQ(r.status, 2) << r.err;
    const std::string junit = slurp(path("j.xml"));
    EXPECT_NE(junit.find("failures=\"1\""), std::string::npos) << arguments << junit;
    EXPECT_NE(slurp(path("m.md")).find("ERROR (bad input)"), std::string::npos) << arguments;
    fs::remove(path("j.xml"));
    fs::remove(path("m.md"));
  }
  // Never over an input: a report named like the trace leaves the trace as it was.
  const std::string before = slurp(trace_);
  const auto r = run("check " + trace_ + " --policy pytorch --baseline " + baseline_ + " --junit " + trace_);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("given as TRACE and as --junit"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(trace_), before);
}

TEST_F(CheckHostileBaseline, TwentyConcurrentUpdatesKeepEveryEntry) {
  std::string script;
  for (int i = 0; i < 20; ++i)
    script += "(" + std::string(MEMREPLAY_CLI) + " check job" + std::to_string(i) + "=" + trace_ +
              " --policy pytorch --update-baseline --baseline " + baseline_ + " >" + path("u" + std::to_string(i)) +
              ".log 2>&1; echo $? >" + path("u" + std::to_string(i)) + ".rc) &\n";
  const auto r = testing::run_shell(script + "wait");
  ASSERT_EQ(r.status, 0) << r.out;
  for (int i = 0; i < 20; ++i) {
    const std::string log = slurp(path("u" + std::to_string(i) + ".log"));
    EXPECT_EQ(slurp(path("u" + std::to_string(i) + ".rc")), "0\n") << log;
    EXPECT_NE(log.find("baseline updated"), std::string::npos) << log;
  }
  const auto entries = nlohmann::json::parse(slurp(baseline_))["entries"];
  EXPECT_EQ(entries.size(), 21u);  // the first entry and one per process
  std::set<std::string> names;
  for (const auto& e : entries) names.insert(e["trace"].get<std::string>());
  for (int i = 0; i < 20; ++i) EXPECT_TRUE(names.count("job" + std::to_string(i))) << i;
  EXPECT_FALSE(fs::exists(baseline_ + ".lock"));  // the last holder removed it
}

}  // namespace
}  // namespace memreplay
