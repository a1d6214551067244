// The CI views of a check: JUnit XML (what Jenkins, GitLab and GitHub test reporters render) and
// a Markdown summary for a pull-request comment.
#include <cstdio>
#include <sstream>

#include "base/text_escape.h"
#include "results/check.h"

namespace memreplay::results {

std::string junit_xml(const std::vector<CheckCase>& cases, double seconds) {
  size_t failures = 0;
  for (const auto& c : cases) failures += c.failed();
  std::ostringstream xml;
  char time[32];
  std::snprintf(time, sizeof time, "%.3f", seconds);
  xml << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<testsuites name=\"memreplay check\" tests=\"" << cases.size() << "\" failures=\"" << failures << "\" time=\""
      << time << "\">\n"
      << "  <testsuite name=\"memreplay check\" tests=\"" << cases.size() << "\" failures=\"" << failures
      << "\" errors=\"0\" time=\"" << time << "\">\n";
  for (const auto& c : cases) {
    xml << "    <testcase classname=\"memreplay.check." << xml_safe(c.trace) << "\" name=\"" << xml_safe(c.policy)
        << "\">\n";
    std::string details;
    size_t regressions = 0;
    for (const auto& f : c.findings) {
      details += terminal_safe(describe_finding(c, f)) + "\n";  // one line each, whatever the names hold
      regressions += f.regression;
    }
    if (c.failed())
      xml << "      <failure message=\"" << regressions << " metric(s) past their limit\" type=\"regression\">"
          << xml_safe(details, true) << "</failure>\n";
    else
      xml << "      <system-out>" << xml_safe(details, true) << "</system-out>\n";
    xml << "    </testcase>\n";
  }
  xml << "  </testsuite>\n</testsuites>\n";
  return xml.str();
}

std::string markdown_summary(const std::vector<CheckCase>& cases) {
  size_t failures = 0;
  for (const auto& c : cases) failures += c.failed();
  std::ostringstream md;
  md << "### memreplay check: " << (failures == 0 ? "passed" : "FAILED") << "\n\n"
     << (cases.size() - failures) << " of " << cases.size() << " trace × policy cases within their limits.\n\n";
  if (failures != 0) {
    md << "**Regressions**\n\n";
    for (const auto& c : cases)
      for (const auto& f : c.findings)
        if (f.regression) md << "- " << markdown_safe(describe_finding(c, f)) << "\n";
    md << "\n";
  }
  md << "| | trace | policy | reserved peak | reserved ÷ requested | unallocated at peak | free-space "
        "fragmentation at peak | device calls | OOM |\n|---|---|---|---:|---:|---:|---:|---:|---|\n";
  for (const auto& c : cases) {
    md << "| " << (c.failed() ? "❌" : "✅") << " | " << markdown_safe(c.trace) << " | " << markdown_safe(c.policy)
       << " |";
    for (const char* metric :
         {"reserved_peak", "overhead", "unallocated_at_peak", "free_fragmentation_at_peak", "device_calls", "oom"})
      md << " " << format_metric(metric, c.values.at(metric)) << " |";
    md << "\n";
  }
  md << "\nLower is better for every column. *Unallocated at peak*: 1 − allocated/reserved at the moment reserved "
        "memory peaked. *Free-space fragmentation*: 1 − largest free range ÷ all free bytes at that moment.\n";
  return md.str();
}

}  // namespace memreplay::results
