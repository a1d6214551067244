// The renderings of a sweep summary: one set of cells per trace, laid out as a terminal table, CSV
// or Markdown, and the JSON document.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/units.h"
#include "results/sweep_summary.h"

namespace memreplay::results {
namespace {

std::string gpu_label(uint64_t bytes) {
  if (bytes % (uint64_t{1} << 30) == 0) return std::to_string(bytes >> 30) + "GiB";
  return format_bytes(bytes);
}

std::string fits_word(Fits fits) { return fits == Fits::yes ? "yes" : fits == Fits::no ? "no" : "?"; }

nlohmann::json fits_json(Fits fits) {
  if (fits == Fits::unknown) return nullptr;
  return fits == Fits::yes;
}

Fits fits_at(const PolicyVerdict* policy, size_t g) { return policy ? policy->fits[g] : Fits::unknown; }

std::string saved_text(const TraceVerdict& t) {
  const PolicyVerdict* current = t.current_policy();
  if (!t.best || !current || current->uncapped->reserved_peak == 0) return "-";
  return format_bytes(t.saved_bytes) + " (" +
         format_percent(double(t.saved_bytes) / double(current->uncapped->reserved_peak)) + ")";
}

// The cells of one trace's row, in the order of header_cells().
std::vector<std::string> row_cells(const SweepSummary& s, const TraceVerdict& t) {
  const PolicyVerdict* current = t.current_policy();
  const PolicyVerdict* best = t.best_policy();
  std::vector<std::string> cells = {t.name, current ? format_bytes(current->uncapped->reserved_peak) : "-",
                                    best ? best->policy : "-", best ? format_bytes(best->uncapped->reserved_peak) : "-",
                                    saved_text(t)};
  for (size_t g = 0; g < s.options.gpu_bytes.size(); ++g)
    cells.push_back(fits_word(fits_at(current, g)) + "/" + fits_word(fits_at(best, g)));
  cells.push_back(std::to_string(t.errors));
  return cells;
}

std::vector<std::string> header_cells(const SweepSummary& s) {
  std::vector<std::string> cells = {"trace", s.options.current_policy + " reserved", "best setting", "best reserved",
                                    "saved"};
  for (uint64_t gpu : s.options.gpu_bytes) cells.push_back("fits " + gpu_label(gpu));
  cells.push_back("errors");
  return cells;
}

std::string rule_text(const SweepSummary& s) {
  char factor[32];
  std::snprintf(factor, sizeof factor, "%g", s.options.device_call_factor);
  return "best setting: the lowest reserved peak among the policies replayed without running out of memory whose "
         "device calls are at most " +
         std::string(factor) + "x those of " + s.options.current_policy + " (the current setting)";
}

std::vector<std::string> total_lines(const SweepSummary& s) {
  const FleetTotals& t = s.totals;
  std::vector<std::string> lines;
  lines.push_back(std::to_string(t.traces) + " traces, " + std::to_string(t.tasks) + " tasks (" +
                  std::to_string(t.error_tasks) + " failed, " + std::to_string(t.duplicate_lines) +
                  " duplicate lines, " + std::to_string(t.torn_lines) + " torn lines skipped)");
  const double share = t.current_reserved_bytes == 0 ? 0 : double(t.saved_bytes) / double(t.current_reserved_bytes);
  lines.push_back("reserved bytes saved by the best settings: " + format_bytes(t.saved_bytes) + " of " +
                  format_bytes(t.current_reserved_bytes) + " (" + format_percent(share) + "), on " +
                  std::to_string(t.traces_with_saving) + " traces");
  for (size_t g = 0; g < s.options.gpu_bytes.size(); ++g)
    lines.push_back("fit on " + gpu_label(s.options.gpu_bytes[g]) + ": " + std::to_string(t.fit_current[g]) +
                    " jobs with " + s.options.current_policy + ", " + std::to_string(t.fit_best[g]) +
                    " with the best setting (not known: " + std::to_string(t.unknown_current[g]) + " / " +
                    std::to_string(t.unknown_best[g]) + ")");
  return lines;
}

std::string csv_cell(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::string markdown_cell(const std::string& text) {
  std::string out;
  for (char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

nlohmann::json policy_json(const SweepSummary& s, const PolicyVerdict& p) {
  nlohmann::json fits = nlohmann::json::array();
  for (size_t g = 0; g < s.options.gpu_bytes.size(); ++g) fits.push_back(fits_json(p.fits[g]));
  nlohmann::json out = {{"policy", p.policy}, {"fits", fits}};
  out["reserved_peak"] = p.uncapped ? nlohmann::json(p.uncapped->reserved_peak) : nlohmann::json(nullptr);
  out["device_calls"] = p.uncapped ? nlohmann::json(p.uncapped->device_calls) : nlohmann::json(nullptr);
  out["failed"] = p.uncapped ? nlohmann::json(p.uncapped->failed) : nlohmann::json(nullptr);
  return out;
}

}  // namespace

std::string summary_table(const SweepSummary& s) {
  std::vector<std::vector<std::string>> rows = {header_cells(s)};
  for (const auto& t : s.traces) rows.push_back(row_cells(s, t));
  std::vector<size_t> widths(rows[0].size(), 0);
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  std::ostringstream out;
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i)
      out << row[i] << (i + 1 < row.size() ? std::string(widths[i] - row[i].size() + 2, ' ') : "\n");
  }
  out << "(fits: with " << s.options.current_policy << "/with the best setting; ?: not known)\n"
      << rule_text(s) << "\n";
  for (const auto& line : total_lines(s)) out << line << "\n";
  return out.str();
}

std::string summary_csv(const SweepSummary& s) {
  std::ostringstream out;
  out << "name,trace,current_policy,current_reserved_bytes,current_device_calls,best_policy,best_reserved_bytes,"
         "best_device_calls,saved_bytes";
  for (uint64_t gpu : s.options.gpu_bytes)
    out << ",fits_" << gpu_label(gpu) << "_current,fits_" << gpu_label(gpu) << "_best";
  out << ",errors,first_error\n";
  const auto number = [](const PolicyVerdict* p, bool reserved) {
    if (!p) return std::string();
    return std::to_string(reserved ? p->uncapped->reserved_peak : p->uncapped->device_calls);
  };
  for (const auto& t : s.traces) {
    const PolicyVerdict* current = t.current_policy();
    const PolicyVerdict* best = t.best_policy();
    out << csv_cell(t.name) << "," << csv_cell(t.trace) << "," << csv_cell(current ? current->policy : "") << ","
        << number(current, true) << "," << number(current, false) << "," << csv_cell(best ? best->policy : "") << ","
        << number(best, true) << "," << number(best, false) << "," << (best ? std::to_string(t.saved_bytes) : "");
    for (size_t g = 0; g < s.options.gpu_bytes.size(); ++g)
      out << "," << fits_word(fits_at(current, g)) << "," << fits_word(fits_at(best, g));
    out << "," << t.errors << "," << csv_cell(t.first_error) << "\n";
  }
  return out.str();
}

std::string summary_markdown(const SweepSummary& s) {
  std::ostringstream out;
  const auto row = [&](const std::vector<std::string>& cells) {
    out << "|";
    for (const auto& c : cells) out << " " << markdown_cell(c) << " |";
    out << "\n";
  };
  const std::vector<std::string> header = header_cells(s);
  row(header);
  out << "|";
  for (size_t i = 0; i < header.size(); ++i) out << (i == 0 ? "---|" : "---:|");
  out << "\n";
  for (const auto& t : s.traces) row(row_cells(s, t));
  out << "\nFits: with " << s.options.current_policy << " / with the best setting; ?: not known. " << rule_text(s)
      << ".\n\n";
  for (const auto& line : total_lines(s)) out << "- " << line << "\n";
  return out.str();
}

nlohmann::json summary_json(const SweepSummary& s) {
  nlohmann::json traces = nlohmann::json::array();
  for (const auto& t : s.traces) {
    nlohmann::json policies = nlohmann::json::array();
    for (const auto& p : t.policies) policies.push_back(policy_json(s, p));
    traces.push_back({{"name", t.name},
                      {"trace", t.trace},
                      {"requested_peak", t.requested_peak},
                      {"current", t.current ? nlohmann::json(t.policies[*t.current].policy) : nlohmann::json(nullptr)},
                      {"best", t.best ? nlohmann::json(t.policies[*t.best].policy) : nlohmann::json(nullptr)},
                      {"saved_bytes", t.saved_bytes},
                      {"errors", t.errors},
                      {"first_error", t.first_error},
                      {"policies", policies}});
  }
  const FleetTotals& tt = s.totals;
  return {{"schema", "memreplay-sweep-summary"},
          {"schema_version", 1},
          {"rule",
           {{"current_policy", s.options.current_policy},
            {"device_call_factor", s.options.device_call_factor},
            {"text", rule_text(s)}}},
          {"gpu_bytes", s.options.gpu_bytes},
          {"traces", traces},
          {"totals",
           {{"traces", tt.traces},
            {"tasks", tt.tasks},
            {"error_tasks", tt.error_tasks},
            {"duplicate_lines", tt.duplicate_lines},
            {"torn_lines", tt.torn_lines},
            {"traces_with_saving", tt.traces_with_saving},
            {"current_reserved_bytes", tt.current_reserved_bytes},
            {"saved_bytes", tt.saved_bytes},
            {"fit_current", tt.fit_current},
            {"fit_best", tt.fit_best},
            {"unknown_current", tt.unknown_current},
            {"unknown_best", tt.unknown_best}}}};
}

}  // namespace memreplay::results
