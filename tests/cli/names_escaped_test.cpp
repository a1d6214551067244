// Text from a trace reaches every sink escaped for it: the terminal (info, fit, advise, check's
// regression lines: no escape sequence, no forged line), JUnit XML (no control character), the
// Markdown summary (no heading, image or link), the HTML report (no "<" inside the embedded data,
// in time linear in the text).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "base/text_escape.h"
#include "proto/trace_writer.h"
#include "results/report_html.h"
#include "tests/support/cli_run.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

namespace fs = std::filesystem;

// Clears the screen, sets the window title, and forges a line of our own.
const std::string kForgedName =
    "\x1b[2J\x1b[1;1Hforward\nmemreplay: all good\r\xc2\x9b"
    "31m";
const std::string kForgedFile = "\x1b]0;title\x07model.py";

// A trace whose one stack has the hostile frame names: a 2 MiB segment, a 1 MiB block from it,
// live at the end (the peak, its stack shown by info and advise).
void write_hostile_trace(const std::string& path, const std::string& frame_name) {
  TraceWriter writer(path);
  proto::TraceHeader header;
  header.set_source("test\x1b[31m");
  auto* device = header.add_devices();
  device->set_name("GPU\x1b[5m");
  device->set_total_memory(uint64_t{80} << 30);
  writer.begin(header);
  const std::vector<FrameText> frames = {{kForgedFile, 7, frame_name}, {"train.py", 1, "main"}};
  const uint32_t stack = writer.intern_stack(frames);
  writer.append(
      Event{.kind = EventKind::segment_alloc, .time_ns = 1, .address = 1 << 24, .size = 2 << 20, .stack = stack});
  writer.append(Event{.kind = EventKind::alloc, .time_ns = 2, .address = 1 << 24, .size = 1 << 20, .stack = stack});
  writer.finish();
}

bool has_raw_controls(const std::string& text) {
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 && c != '\n') || c == 0x7f) return true;
    if (c == 0xc2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
        static_cast<unsigned char>(text[i + 1]) <= 0x9f)
      return true;
  }
  return false;
}

bool has_line(const std::string& text, const std::string& line) {
  return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

class NamesEscaped : public testing::TempDirTest {};

TEST(TerminalSafe, EveryControlCharacterBecomesVisible) {
  EXPECT_EQ(terminal_safe("a\x1b[2Jb\nc\td\re\x01\x7f\\"), "a\\e[2Jb\\nc\\td\\re\\x01\\x7f\\");
  EXPECT_EQ(terminal_safe("\xc2\x9b"
                          "31m \xc2\xa0 é"),
            "\\u009b31m \xc2\xa0 é");  // C1 escaped, other UTF-8 kept
  EXPECT_EQ(terminal_safe("plain text"), "plain text");
}

TEST(JsonForScript, TheSameValueWithoutAnyAngleBracket) {
  const nlohmann::json value = {{"frame", "<!--<script></script>&\xe2\x80\xa8"}};
  const std::string safe = json_for_script(value.dump());
  EXPECT_EQ(safe.find('<'), std::string::npos);
  EXPECT_EQ(safe.find('>'), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(safe), value);
}

TEST_F(NamesEscaped, InfoFitAndAdvisePrintNoEscapeSequence) {
  write_hostile_trace(path("t.mrt"), kForgedName);
  const std::string t = path("t.mrt");
  for (const std::string command : {"info " + t, "fit " + t + " --policy pytorch --capacity 1MiB",
                                    "advise " + t + " --no-fit", "record -o " + path("r.mrt") + " -- /no/such"}) {
    const testing::CliRun run = testing::run_memreplay(command);  // stdout and stderr together
    EXPECT_FALSE(has_raw_controls(run.out)) << command << "\n" << run.out;
    EXPECT_FALSE(has_line(run.out, "memreplay: all good")) << command;
    if (command.starts_with("info") || command.starts_with("fit"))
      EXPECT_NE(run.out.find("\\e[2J\\e[1;1Hforward\\nmemreplay: all good\\r\\u009b31m"), std::string::npos)
          << command << "\n"
          << run.out;
  }
}

TEST_F(NamesEscaped, JunitMarkdownAndRegressionLinesOfAHostileTraceName) {
  const std::string name = "evil\x1b[31m\n# Heading\n![x](https:example.png)|<b>";
  write_hostile_trace(path(name + ".mrt"), "f");
  const testing::CliRun run =
      testing::run_memreplay("check '" + path(name + ".mrt") + "' --policy pytorch --max-overhead 1.0 --junit " +
                                 path("j.xml") + " --markdown " + path("s.md"),
                             dir_);
  // check refuses a trace name with a control character (it asks for --name); the refusal reaches
  // the JUnit and Markdown reports with the name in it, escaped there as on stderr.
  ASSERT_EQ(run.status, 2) << run.err;
  EXPECT_NE(run.err.find("holds a control character"), std::string::npos) << run.err;
  EXPECT_FALSE(has_raw_controls(run.err)) << run.err;
  const std::string xml = testing::slurp(path("j.xml"));
  EXPECT_FALSE(has_raw_controls(xml)) << xml;
  EXPECT_EQ(xml.find("<b>"), std::string::npos);
  EXPECT_NE(xml.find("evil\\e[31m\\n# Heading"), std::string::npos) << xml;
  const std::string md = testing::slurp(path("s.md"));
  EXPECT_FALSE(has_raw_controls(md)) << md;
  // Markup is inert: the name is on one line of an indented code block, nowhere else.
  for (size_t at = 0; at < md.size(); at = md.find('\n', at) + 1) {
    const std::string line = md.substr(at, md.find('\n', at) - at);
    EXPECT_FALSE(line.starts_with("# ")) << md;
    if (line.find("![x](") != std::string::npos || line.find("<b>") != std::string::npos)
      EXPECT_TRUE(line.starts_with("    ")) << md;
    if (md.find('\n', at) == std::string::npos) break;
  }
}

TEST_F(NamesEscaped, TheReportsDataHoldsNoAngleBracket) {
  write_hostile_trace(path("t.mrt"), "<!--<script>x</script><script>alert(1)</script>");
  const testing::CliRun run =
      testing::run_memreplay("report " + path("t.mrt") + " --policy pytorch -o " + path("r.html"), dir_);
  ASSERT_EQ(run.status, 0) << run.err;
  const std::string page = testing::slurp(path("r.html"));
  const std::string open = "<script type=\"application/json\" id=\"memreplay-data\">";
  const size_t begin = page.find(open) + open.size();
  ASSERT_NE(begin, std::string::npos + open.size());
  const std::string data = page.substr(begin, page.find("</script>", begin) - begin);
  EXPECT_EQ(data.find('<'), std::string::npos);
  EXPECT_NE(nlohmann::json::parse(data).dump().find("<!--<script>x</script>"), std::string::npos);
}

TEST(ReportHtml, AHalfMegabyteFrameNameRendersInLinearTime) {
  std::string name;
  while (name.size() < 480'000) name += "</";
  const auto start = std::chrono::steady_clock::now();
  const std::string page = results::render_report_html({{"trace", "t.mrt"}, {"frame", name}});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 1.0);
  EXPECT_GT(page.size(), name.size());
}

}  // namespace
}  // namespace memreplay
