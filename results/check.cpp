#include "results/check.h"

#include <algorithm>
#include <filesystem>

#include "base/units.h"

namespace memreplay::results {
namespace {

std::string oom_note(const OomPoint& oom) {
  return "the replay ran out of memory at event " + std::to_string(oom.event) + " (" + format_bytes(oom.request_bytes) +
         " requested): its numbers cover only the events before it";
}

void compare_with_baseline(CheckCase& c, const BaselineEntry& entry, const std::map<std::string, double>& tolerances,
                           const Allowances& allow) {
  for (const auto& metric : check_metrics()) {
    const std::string name(metric.name);
    const auto base = entry.values.find(name);
    const auto now = c.values.find(name);
    if (base == entry.values.end() || now == c.values.end()) continue;
    const double limit = limit_from_baseline(metric, base->second, tolerance_of(metric, tolerances));
    Finding f{name,       now->second, base->second, limit, metric.worse, past_limit(metric, now->second, limit),
              "baseline", ""};
    if (f.regression && metric.worse == Worse::lower) {
      f.note = "the trace shrank: less than its baseline (a run cut short, a smaller job, a recording that missed it?)";
      if (allow.allow_shrink) f.regression = false, f.note += "; allowed by --allow-shrink";
    }
    if (f.regression && allow.accept) f.regression = false, f.note = "accepted by --accept";
    c.findings.push_back(std::move(f));
  }
}

void compare_with_limits(CheckCase& c, const Limits& limits) {
  const auto add = [&](const std::string& name, double limit, const std::string& option) {
    const double value = c.values.at(name);
    c.findings.push_back({name, value, std::nullopt, limit, Worse::higher, value > limit + 1e-12, option, ""});
  };
  if (limits.max_reserved) add("reserved_peak", double(*limits.max_reserved), "--max-reserved");
  if (limits.max_overhead) add("overhead", *limits.max_overhead, "--max-overhead");
  if (limits.must_fit) add("oom", 0, "--capacity");
}

// An OOM: every comparison fails, and one finding names the OOM itself.
void fail_everything_for_oom(CheckCase& c, const OomPoint& oom) {
  for (auto& f : c.findings) {
    f.regression = true;
    f.note = oom_note(oom);
  }
  const bool named =
      std::any_of(c.findings.begin(), c.findings.end(), [](const Finding& f) { return f.metric == "oom"; });
  if (!named) c.findings.push_back({"oom", 1, std::nullopt, 0, Worse::higher, true, "replay", oom_note(oom)});
}

}  // namespace

bool CheckCase::failed() const {
  return (is_new && !new_allowed) ||
         std::any_of(findings.begin(), findings.end(), [](const Finding& f) { return f.regression; });
}

std::string CheckCase::status() const {
  if (std::any_of(findings.begin(), findings.end(), [](const Finding& f) { return f.regression; })) return "failed";
  return is_new ? "new" : "passed";
}

double tolerance_of(const CheckMetric& metric, const std::map<std::string, double>& tolerances) {
  const auto t = tolerances.find(std::string(metric.name));
  return t != tolerances.end() ? t->second : metric.default_tolerance;
}

CheckCase evaluate_case(const CaseInput& input, const BaselineEntry* entry, bool baseline_in_use,
                        const std::map<std::string, double>& tolerances, const Limits& limits,
                        const Allowances& allow) {
  CheckCase c{input.trace, input.policy, input.values, {}, false, false, input.oom};
  if (!input.oom && input.values.at("requested_peak") == 0)
    c.findings.push_back({"requested_peak", 0, std::nullopt, 1, Worse::lower, !allow.allow_empty, "trace",
                          std::string("the trace requested no memory: no allocation to check (an empty recording?)") +
                              (allow.allow_empty ? "; allowed by --allow-empty" : "")});
  if (entry) compare_with_baseline(c, *entry, tolerances, allow);
  if (baseline_in_use && !entry) c.is_new = true, c.new_allowed = allow.allow_new;
  compare_with_limits(c, limits);
  if (input.oom) fail_everything_for_oom(c, *input.oom);
  return c;
}

std::string trace_name(const std::string& path) {
  std::filesystem::path p(path);
  return p.extension() == ".mrt" ? p.stem().string() : p.filename().string();
}

std::string describe_finding(const CheckCase& c, const Finding& f) {
  const std::string who = c.trace + " " + c.policy + ": ";
  if (f.metric == "oom") {
    std::string line = who + (f.value > 0 ? "ran out of memory" : "fits");
    if (f.baseline)
      line += *f.baseline > 0 ? " (baseline: ran out of memory too)" : " (baseline: fitted)";
    else if (f.source != "replay")
      line += " under " + f.source;
    if (c.oom)
      line += " at event " + std::to_string(c.oom->event) + " (" + format_bytes(c.oom->request_bytes) + " requested)";
    return line;
  }
  if (f.source == "trace") return who + f.note;
  const bool over = f.worse == Worse::higher ? f.value > f.limit : f.value < f.limit;
  const char* relation =
      f.worse == Worse::higher ? (over ? " > limit " : " <= limit ") : (over ? " < limit " : " >= limit ");
  std::string line =
      who + f.metric + " " + format_metric(f.metric, f.value) + relation + format_metric(f.metric, f.limit);
  line += f.baseline ? " (baseline " + format_metric(f.metric, *f.baseline) + ")" : " (" + f.source + ")";
  if (!f.note.empty()) line += ": " + f.note;
  return line;
}

}  // namespace memreplay::results
