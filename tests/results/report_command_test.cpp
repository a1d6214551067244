// memreplay report in Debian's headless Chromium: the page loads from disk with no console error,
// the timeline and the segment map draw, it is small and paints fast; a damaged or incomplete
// trace gets no report at all.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>

#include "proto/trace_reader.h"
#include "proto/trace_writer.h"
#include "replayer/replay_runner.h"
#include "tests/support/cli_run.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

namespace fs = std::filesystem;

struct PageLoad {
  std::string body;  // the <body ...> tag after the scripts ran: its data-* say what was drawn
  std::string dom;  // the whole page after the scripts ran
  std::string log;  // Chromium's log: console messages appear as CONSOLE lines
  int status = -1;
};

PageLoad load_in_chromium(const std::string& html, const std::string& dir) {
  const std::string dom = dir + "/dom.html", log = dir + "/chromium.log";
  const std::string command =
      "chromium --headless --no-sandbox --disable-gpu --enable-logging=stderr --v=0 "
      "--window-size=1400,1000 --dump-dom 'file://" +
      html + "' >" + dom + " 2>" + log;
  PageLoad p;
  p.status = std::system(command.c_str());
  const std::string text = testing::slurp(dom);
  std::smatch m;
  if (std::regex_search(text, m, std::regex("<body[^>]*>"))) p.body = m.str();
  p.dom = text;
  p.log = testing::slurp(log);
  return p;
}

long attribute(const std::string& body, const std::string& name) {
  std::smatch m;
  if (!std::regex_search(body, m, std::regex(name + "=\"([0-9]+)\""))) return -1;
  return std::stol(m[1]);
}

class ReportCommand : public testing::TempDirTest {
 protected:
  // gpt2_generate four times over, each copy at its own addresses and after the one before, with
  // no stacks or annotations (the copy keeps only what the replay reads): over 2^20 replay events.
  std::string quadrupled_gpt2_generate() {
    const std::string out = path("gpt2_generate_x4.mrt");
    TraceReader reader(testing::imported_trace("gpt2_generate.default"));
    const uint64_t span = reader.footer()->max_time_ns() + 1;
    TraceWriter writer(out);
    writer.begin(reader.header());
    std::vector<Event> batch;
    for (uint64_t copy = 0; copy < 4; ++copy) {
      reader.seek_to_time(0);
      while (reader.next_batch(batch))
        for (Event e : batch) {
          if (e.kind == EventKind::annotation || (copy > 0 && e.has_flag(kPreexisting))) continue;
          if (e.address != 0) e.address += copy << 44;
          e.time_ns += copy * span;
          e.stack = 0;
          writer.append(e);
        }
    }
    writer.finish();
    return out;
  }
};

TEST_F(ReportCommand, Gpt2GeneratePageDrawsInChromiumWithNoConsoleError) {
  const std::string trace = testing::imported_trace("gpt2_generate.default"), html = path("report.html");
  const auto r =
      testing::run_memreplay("report " + trace +
                                 " --policy pytorch --policy pytorch:expandable_segments:True "
                                 "--policy pytorch:max_split_size_mb:64 --policy cuda_async --policy passthrough "
                                 "-o " +
                                 html,
                             dir_);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto bytes = fs::file_size(html);
  EXPECT_LT(bytes, 5u * 1000 * 1000) << "target: under 5 MB";
  const std::string page = testing::slurp(html);
  EXPECT_EQ(page.find("http://"), std::string::npos) << "the page must not reach the network";
  EXPECT_EQ(page.find("https://cdn"), std::string::npos);
  EXPECT_NE(page.find("Permission is hereby granted"), std::string::npos) << "the MIT licences are kept";

  // The page decodes only the overview it paints first (results/report_series.h), so every load
  // must paint within 2 s, not just the best of several, on this shared 2-core machine.
  std::string all_ms;
  long worst_ms = -1;
  for (int round = 0; round < 3; ++round) {
    const PageLoad load = load_in_chromium(html, dir_.string());
    ASSERT_EQ(load.status, 0) << load.log;
    ASSERT_NE(load.body.find("data-state=\"drawn\""), std::string::npos) << load.body;
    EXPECT_EQ(attribute(load.body, "data-errors"), 0) << load.body;
    EXPECT_GT(attribute(load.body, "data-timeline-ink"), 1000) << load.body;
    EXPECT_GT(attribute(load.body, "data-segment-ink"), 1000) << load.body;
    EXPECT_EQ(load.log.find("CONSOLE"), std::string::npos) << load.log;
    const long ms = attribute(load.body, "data-drawn-ms");
    EXPECT_GT(ms, 0) << load.body;
    worst_ms = std::max(worst_ms, ms);
    all_ms += (all_ms.empty() ? "" : ", ") + std::to_string(ms);
  }
  std::printf("report: %.2f MB, charts drawn %s ms after navigation start\n", double(bytes) / 1e6, all_ms.c_str());
  EXPECT_LT(worst_ms, 2000) << "target: first paint under 2 s, every load (" << all_ms << " ms)";

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

TEST_F(ReportCommand, ZoomShowsExactValuesPastTwoToTheTwentiethEvent) {
  const std::string trace = quadrupled_gpt2_generate(), html = path("long.html");
  ReplayOptions exact;
  exact.trace_path = trace;
  exact.policy_spec = "pytorch:expandable_segments:True";
  exact.timeline_points = size_t{1} << 23;
  const ReplayMetrics m = run_replay(exact);
  ASSERT_GT(m.events, uint64_t{1} << 20) << "the test needs a trace longer than 2^20 events";
  ASSERT_EQ(m.timeline.size(), m.events);

  const auto r =
      testing::run_memreplay("report " + trace + " --policy pytorch:expandable_segments:True -o " + html, dir_);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_LT(fs::file_size(html), 5u * 1000 * 1000);
  // Three places past 2^20, zoomed to 100 events each: the page draws every event, and the values
  // at the probed one are the replay's own, to the byte.
  for (const uint64_t at : {m.events - 7, (uint64_t{1} << 20) + 12345, m.events * 5 / 6 + 1}) {
    const uint64_t event = m.timeline[at].event;
    const std::string zoom = std::to_string(event - 50) + "-" + std::to_string(event + 50);
    const PageLoad load =
        load_in_chromium(html + "#view=timeline&zoom=" + zoom + "&probe=" + std::to_string(event), dir_.string());
    ASSERT_NE(load.body.find("data-state=\"drawn\""), std::string::npos) << load.body;
    EXPECT_EQ(attribute(load.body, "data-errors"), 0) << load.body;
    const auto& p = m.timeline[at];
    const std::string expected =
        std::to_string(p.requested) + " " + std::to_string(p.reserved) + " " + std::to_string(p.allocated);
    EXPECT_NE(load.body.find("data-timeline-probe=\"" + expected + "\""), std::string::npos)
        << "event " << at << ": expected requested, reserved, allocated " << expected << "\n"
        << load.body;
  }
}

// Under a cap: the capacity line, a marker at each OOM, the y axis named, the segment map's colours
// explained, the scale switch; uncapped, a policy that takes the device up front (bfc) starts
// hidden with a note, and the log scale shows it.
TEST_F(ReportCommand, CapacityLineOomMarkersAxisTitleLegendAndScaleSwitch) {
  const std::string trace = testing::imported_trace("gpt2_train.stacks"), capped = path("capped.html");
  auto r = testing::run_memreplay("report " + trace +
                                      " --policy pytorch --policy pytorch:expandable_segments:True --policy cuda_async "
                                      "--capacity 7.4GiB -o " +
                                      capped,
                                  dir_);
  ASSERT_EQ(r.status, 0) << r.err;
  PageLoad load = load_in_chromium(capped, dir_.string());
  ASSERT_NE(load.body.find("data-state=\"drawn\""), std::string::npos) << load.body;
  EXPECT_EQ(attribute(load.body, "data-errors"), 0) << load.body;
  EXPECT_NE(load.body.find("data-capacity-line=\"capacity 7.40 GiB\""), std::string::npos) << load.body;
  EXPECT_EQ(attribute(load.body, "data-oom-markers"), 2) << "pytorch and cuda_async run out: " << load.body;
  EXPECT_NE(load.body.find("data-y-axis-label=\"bytes\""), std::string::npos) << load.body;
  EXPECT_GT(attribute(load.body, "data-legend-entries"), 2) << load.body;
  EXPECT_NE(load.dom.find("id=\"scale-log\""), std::string::npos);
  EXPECT_NE(load.dom.find("*: the lowest reserved peak without OOM"), std::string::npos);

  const std::string whole = path("whole.html");
  r = testing::run_memreplay("report " + trace + " --policy pytorch --policy bfc -o " + whole, dir_);
  ASSERT_EQ(r.status, 0) << r.err;
  load = load_in_chromium(whole, dir_.string());
  EXPECT_EQ(attribute(load.body, "data-errors"), 0) << load.body;
  EXPECT_NE(load.dom.find("Hidden at first: bfc (reserved peak 139.80 GiB)"), std::string::npos);
  EXPECT_NE(load.dom.find("bfc reserves up front"), std::string::npos);
  load = load_in_chromium(whole + "#scale=log", dir_.string());
  EXPECT_NE(load.body.find("data-timeline-scale=\"log\""), std::string::npos) << load.body;
  EXPECT_NE(load.body.find("data-y-axis-label=\"bytes (log scale)\""), std::string::npos) << load.body;
  EXPECT_NE(load.body.find("data-capacity-line=\"device memory 139.80 GiB\""), std::string::npos) << load.body;
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
