// The views of a check: JUnit XML (what Jenkins, GitLab and GitHub test reporters render), a
// Markdown summary for a pull-request comment, and the JSON result; each also for a check that
// could not run (bad input), as one failing case naming the error.
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/text_escape.h"
#include "base/units.h"
#include "proto/schema_versions.h"
#include "proto/wire_format.h"
#include "results/check_run.h"

namespace memreplay::results {
namespace {

// Names may hold any bytes: XML and Markdown readers take well-formed UTF-8 only.
std::string xml_safe_utf8(const std::string& text, bool keep_newlines = false) {
  return xml_safe(wire::valid_utf8(text), keep_newlines);
}
std::string markdown_safe_utf8(const std::string& text) { return markdown_safe(wire::valid_utf8(text)); }

std::string seconds_text(double seconds) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3f", seconds);
  return buffer;
}

std::string new_line(const CheckCase& c) {
  return c.trace + " " + c.policy + ": new, no baseline entry" +
         (c.new_allowed ? " (allowed)" : " (--allow-new to pass it, --update-baseline to add it)");
}

std::string case_details(const CheckCase& c) {
  std::string details;
  if (c.is_new) details += new_line(c) + "\n";
  for (const auto& f : c.findings) details += describe_finding(c, f) + "\n";
  return details;
}

std::string failure_message(const CheckCase& c, std::string& type) {
  const size_t regressions =
      std::count_if(c.findings.begin(), c.findings.end(), [](const Finding& f) { return f.regression; });
  if (c.oom) return type = "oom", "ran out of memory at event " + std::to_string(c.oom->event);
  if (regressions == 0) return type = "new", "new: no baseline entry";
  type = "regression";
  return std::to_string(regressions) + " metric(s) past their limit";
}

std::string junit_document(size_t tests, size_t failures, double seconds, const std::string& cases) {
  const std::string counts = "tests=\"" + std::to_string(tests) + "\" failures=\"" + std::to_string(failures) + "\"";
  std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  xml += "<testsuites name=\"memreplay check\" " + counts + " time=\"" + seconds_text(seconds) + "\">\n";
  xml += "  <testsuite name=\"memreplay check\" " + counts + " errors=\"0\" time=\"" + seconds_text(seconds) + "\">\n";
  xml += cases;
  return xml += "  </testsuite>\n</testsuites>\n";
}

std::string junit_case(const std::string& classname, const std::string& name, const std::string& failure_type,
                       const std::string& failure, const std::string& details) {
  std::string xml =
      "    <testcase classname=\"" + xml_safe_utf8(classname) + "\" name=\"" + xml_safe_utf8(name) + "\">\n";
  if (!failure_type.empty())
    xml += "      <failure message=\"" + xml_safe_utf8(failure) + "\" type=\"" + failure_type + "\">" +
           xml_safe_utf8(details, true) + "</failure>\n";
  else
    xml += "      <system-out>" + xml_safe_utf8(details, true) + "</system-out>\n";
  return xml + "    </testcase>\n";
}

std::string update_lines(const BaselineUpdate& u) {
  std::string lines;
  for (const auto& e : u.changes) {
    if (e.added) lines += e.trace + " " + e.policy + ": added\n";
    for (const auto& m : e.metrics)
      if (!e.added) lines += describe_change(e, m) + "\n";
  }
  return lines;
}

const Finding* finding_for(const CheckCase& c, const std::string& metric, bool from_baseline) {
  for (const auto& f : c.findings)
    if (f.metric == metric && (f.source == "baseline") == from_baseline) return &f;
  return nullptr;
}

// One table row per case × metric: baseline, new value, change, the limits it was held to.
std::string metric_row(const CheckCase& c, const CheckMetric& metric) {
  const std::string name(metric.name);
  const Finding* base = finding_for(c, name, true);
  const Finding* plain = finding_for(c, name, false);
  const bool failed = (base && base->regression) || (plain && plain->regression);
  std::string limits;
  for (const Finding* f : {base, plain}) {
    if (!f || f->source == "trace" || f->source == "replay") continue;
    const std::string bound =
        name == "oom" ? "must fit" : (f->worse == Worse::higher ? "≤ " : "≥ ") + format_metric(name, f->limit);
    limits += (limits.empty() ? "" : ", ") + bound + (f->source == "baseline" ? "" : " (" + f->source + ")");
  }
  const std::string before = base ? format_metric(name, *base->baseline) : (c.is_new ? "new" : "—");
  const std::string change = base ? format_change(name, *base->baseline, base->value) : "";
  return "| " + std::string(failed ? "❌" : (c.is_new ? "🆕" : "✅")) + " | " + markdown_safe_utf8(c.trace) + " | " +
         markdown_safe_utf8(c.policy) + " | " + std::string(metric.label) + " | " + before + " | " +
         format_metric(name, c.values.at(name)) + " | " + change + " | " + limits + " |\n";
}

}  // namespace

std::string describe_change(const EntryChange& e, const MetricChange& m) {
  std::string line = e.trace + " " + e.policy + ": " + m.metric + " ";
  if (!m.before) return line + format_metric(m.metric, m.after) + " (new)";
  line += format_metric(m.metric, *m.before) + " -> " + format_metric(m.metric, m.after) + " (" +
          format_change(m.metric, *m.before, m.after) + ")";
  if (m.beyond_tolerance) {
    const bool points = check_metric(m.metric).absolute_tolerance;
    char tolerance[32];
    std::snprintf(tolerance, sizeof tolerance, points ? "%.3g" : "%.3g%%", points ? m.tolerance : m.tolerance * 100);
    line += std::string(", beyond its ") + tolerance + " tolerance";
  }
  return line;
}

std::string junit_xml(const CheckResult& result) {
  std::string cases;
  for (const auto& c : result.cases) {
    std::string type;
    const std::string message = c.failed() ? failure_message(c, type) : "";
    cases += junit_case("memreplay.check." + c.trace, c.policy, type, message, case_details(c));
  }
  size_t tests = result.cases.size(), failures = result.failed_cases();
  if (result.update) {
    ++tests;
    const auto& u = *result.update;
    failures += u.refused.has_value();
    cases += junit_case("memreplay.check", "baseline update", u.refused ? "refused" : "",
                        u.refused ? "baseline not updated: " + *u.refused : "", update_lines(u));
  }
  return junit_document(tests, failures, result.seconds, cases);
}

std::string junit_error_xml(const std::string& message) {
  return junit_document(1, 1, 0, junit_case("memreplay.check", "bad input", "bad-input", message, message + "\n"));
}

std::string markdown_summary(const CheckResult& result) {
  const size_t failures = result.failed_cases();
  std::ostringstream md;
  md << "### memreplay check: " << (result.passed() ? "passed" : "FAILED") << "\n\n"
     << (result.cases.size() - failures) << " of " << result.cases.size()
     << " trace × policy cases within their limits.\n\n";
  if (failures != 0) {
    md << "**Regressions**\n\n";
    for (const auto& c : result.cases)
      for (const auto& f : c.findings)
        if (f.regression) md << "- " << markdown_safe_utf8(describe_finding(c, f)) << "\n";
    md << "\n";
  }
  if (std::any_of(result.cases.begin(), result.cases.end(), [](const CheckCase& c) { return c.is_new; })) {
    md << "**New** (no baseline entry)\n\n";
    for (const auto& c : result.cases)
      if (c.is_new) md << "- " << markdown_safe_utf8(new_line(c)) << "\n";
    md << "\n";
  }
  if (result.update) {
    const auto& u = *result.update;
    md << "**Baseline update**: "
       << (u.written ? "written" : "not written: " + markdown_safe_utf8(u.refused.value_or(""))) << "\n\n";
    std::istringstream lines(update_lines(u));
    for (std::string line; std::getline(lines, line);) md << "- " << markdown_safe_utf8(line) << "\n";
    md << "\n";
  }
  md << "| | trace | policy | metric | baseline | new | change | limit |\n|---|---|---|---|---:|---:|---:|---|\n";
  for (const auto& c : result.cases)
    for (const auto& metric : check_metrics())
      if (c.values.count(std::string(metric.name))) md << metric_row(c, metric);
  md << "\nLower is better for every cost. The requested peak is the job's own size: when it grew as much as "
        "the reserved peak, the model grew; when the reserved peak grew alone, the allocator wastes more "
        "(fragmentation). *Unallocated at peak*: 1 − allocated/reserved at the moment reserved memory peaked. "
        "*Free-space fragmentation*: 1 − largest free range ÷ all free bytes at that moment.\n";
  return md.str();
}

std::string markdown_error(const std::string& message) {
  return "### memreplay check: ERROR (bad input)\n\nThe check could not run:\n\n    " +
         wire::valid_utf8(terminal_safe(message)) +
         "\n\nExit status 2: fix the input; no trace × policy case was checked.\n";
}

nlohmann::json to_json(const CheckResult& result) {
  nlohmann::json cases = nlohmann::json::array();
  for (const auto& c : result.cases) {
    nlohmann::json findings = nlohmann::json::array();
    for (const auto& f : c.findings)
      findings.push_back({{"metric", f.metric},
                          {"value", f.value},
                          {"baseline", f.baseline ? nlohmann::json(*f.baseline) : nlohmann::json(nullptr)},
                          {"limit", f.limit},
                          {"worse", f.worse == Worse::higher ? "higher" : "lower"},
                          {"source", f.source},
                          {"regression", f.regression},
                          {"note", f.note}});
    cases.push_back({{"trace", c.trace},
                     {"policy", c.policy},
                     {"status", c.status()},
                     {"passed", !c.failed()},
                     {"new", c.is_new},
                     {"oom", c.oom ? nlohmann::json{{"event", c.oom->event}, {"request_bytes", c.oom->request_bytes}}
                                   : nlohmann::json(nullptr)},
                     {"metrics", c.values},
                     {"findings", findings}});
  }
  nlohmann::json update = nullptr;
  if (result.update) {
    nlohmann::json changes = nlohmann::json::array();
    for (const auto& e : result.update->changes) {
      nlohmann::json metrics = nlohmann::json::array();
      for (const auto& m : e.metrics)
        metrics.push_back({{"metric", m.metric},
                           {"before", m.before ? nlohmann::json(*m.before) : nlohmann::json(nullptr)},
                           {"after", m.after},
                           {"tolerance", m.tolerance},
                           {"beyond_tolerance", m.beyond_tolerance}});
      changes.push_back({{"trace", e.trace}, {"policy", e.policy}, {"added", e.added}, {"metrics", metrics}});
    }
    update = {{"written", result.update->written},
              {"refused", result.update->refused ? nlohmann::json(*result.update->refused) : nlohmann::json(nullptr)},
              {"changes", changes}};
  }
  return {{"schema", "memreplay-check-result"},
          {"schema_version", schema::kCheckResult},
          {"capacity", result.capacity ? nlohmann::json(*result.capacity) : nlohmann::json(nullptr)},
          {"tolerances", result.tolerances},
          {"passed", result.passed()},
          {"failed_cases", result.failed_cases()},
          {"seconds", result.seconds},
          {"cases", cases},
          {"baseline_update", update},
          {"error", nullptr}};
}

nlohmann::json check_error_json(const std::string& message) {
  return {{"schema", "memreplay-check-result"},
          {"schema_version", schema::kCheckResult},
          {"passed", false},
          {"failed_cases", 0},
          {"cases", nlohmann::json::array()},
          {"baseline_update", nullptr},
          {"error", wire::valid_utf8(terminal_safe(message))}};
}

}  // namespace memreplay::results
