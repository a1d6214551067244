// memreplay report in Debian's headless Chromium: the page loads from disk with no console error,
// the timeline and the segment map draw, it is small and paints fast; a damaged or incomplete
// trace gets no report at all.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <regex>

#include "tests/cli_run.h"
#include "tests/test_support.h"

namespace memreplay {
namespace {

namespace fs = std::filesystem;

struct PageLoad {
  std::string body;    // the <body ...> tag after the scripts ran: its data-* say what was drawn
  std::string log;     // Chromium's log: console messages appear as CONSOLE lines
  int status = -1;
};

PageLoad load_in_chromium(const std::string& html, const std::string& dir) {
  const std::string dom = dir + "/dom.html", log = dir + "/chromium.log";
  const std::string command = "chromium --headless --no-sandbox --disable-gpu --enable-logging=stderr --v=0 "
                              "--window-size=1400,1000 --dump-dom 'file://" + html + "' >" + dom + " 2>" + log;
  PageLoad p;
  p.status = std::system(command.c_str());
  const std::string text = testing::slurp(dom);
  std::smatch m;
  if (std::regex_search(text, m, std::regex("<body[^>]*>"))) p.body = m.str();
  p.log = testing::slurp(log);
  return p;
}

long attribute(const std::string& body, const std::string& name) {
  std::smatch m;
  if (!std::regex_search(body, m, std::regex(name + "=\"([0-9]+)\""))) return -1;
  return std::stol(m[1]);
}

class ReportCommand : public testing::TempDirTest {};

TEST_F(ReportCommand, Gpt2GeneratePageDrawsInChromiumWithNoConsoleError) {
  const std::string trace = testing::imported_trace("gpt2_generate.default"), html = path("report.html");
  const auto r = testing::run_memreplay("report " + trace + " --policy pytorch --policy pytorch:expandable_segments:True "
                                        "--policy pytorch:max_split_size_mb:64 --policy cuda_async --policy passthrough "
                                        "-o " + html,
                                        dir_);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto bytes = fs::file_size(html);
  EXPECT_LT(bytes, 5u * 1000 * 1000) << "target: under 5 MB";
  const std::string page = testing::slurp(html);
  EXPECT_EQ(page.find("http://"), std::string::npos) << "the page must not reach the network";
  EXPECT_EQ(page.find("https://cdn"), std::string::npos);
  EXPECT_NE(page.find("Permission is hereby granted"), std::string::npos) << "the MIT licences are kept";

  // The machine is shared (load averages of 4 to 9 on 2 cores were seen): up to 5 loads, the best counts.
  long best_ms = -1;
  for (int round = 0; round < 5 && (best_ms < 0 || best_ms >= 2000); ++round) {
    const PageLoad load = load_in_chromium(html, dir_.string());
    ASSERT_EQ(load.status, 0) << load.log;
    ASSERT_NE(load.body.find("data-state=\"drawn\""), std::string::npos) << load.body;
    EXPECT_EQ(attribute(load.body, "data-errors"), 0) << load.body;
    EXPECT_GT(attribute(load.body, "data-timeline-ink"), 1000) << load.body;
    EXPECT_GT(attribute(load.body, "data-segment-ink"), 1000) << load.body;
    EXPECT_EQ(load.log.find("CONSOLE"), std::string::npos) << load.log;
    const long ms = attribute(load.body, "data-drawn-ms");
    best_ms = best_ms < 0 ? ms : std::min(best_ms, ms);
  }
  std::printf("report: %.2f MB, charts drawn %ld ms after navigation start (best of the loads)\n", double(bytes) / 1e6, best_ms);
  EXPECT_LT(best_ms, 2000) << "target: first paint under 2 s";

  // Zoomed to 200 events: every event is drawn (no downsampling), and lines are there.
  const PageLoad zoomed = load_in_chromium(html + "#view=timeline&zoom=271700-271900", dir_.string());
  std::smatch shown;
  ASSERT_TRUE(std::regex_search(zoomed.body, shown, std::regex("data-timeline-shown=\"([0-9]+) 271700 271900\"")))
      << zoomed.body;
  EXPECT_GE(std::stol(shown[1]), 201);
  EXPECT_LE(std::stol(shown[1]), 203);
  EXPECT_GT(attribute(zoomed.body, "data-timeline-ink"), 1000) << zoomed.body;
  EXPECT_EQ(attribute(zoomed.body, "data-errors"), 0);
}

TEST_F(ReportCommand, DamagedOrIncompleteTraceGetsNoReport) {
  const std::string trace = path("t.mrt");
  fs::copy_file(testing::imported_trace("multistream_pipeline.default"), trace);
  // A flipped byte inside the first chunk: its CRC fails.
  {
    std::fstream f(trace, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(200);
    char c;
    f.read(&c, 1);
    f.seekp(200);
    c = static_cast<char>(c ^ 0x5a);
    f.write(&c, 1);
  }
  auto r = testing::run_memreplay("report " + trace + " -o " + path("bad.html"), dir_);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_FALSE(fs::exists(path("bad.html")));
  EXPECT_FALSE(fs::exists(path("bad.html.tmp")));

  const std::string cut = path("cut.mrt");
  fs::copy_file(testing::imported_trace("multistream_pipeline.default"), cut);
  fs::resize_file(cut, fs::file_size(cut) - 40);
  r = testing::run_memreplay("report " + cut + " -o " + path("cut.html"), dir_);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("incomplete"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(path("cut.html")));
}

}  // namespace
}  // namespace memreplay
