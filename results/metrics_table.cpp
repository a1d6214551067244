#include "results/metrics_table.h"

#include <cstdio>

#include "base/units.h"
#include "policies/registry.h"
#include "results/text_table.h"

namespace memreplay::results {
namespace {

constexpr size_t kPolicyWidth = 32;  // policy specs wrap beyond this (not with `wide`)

std::string ratio(const ReplayMetrics& m) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3f",
                m.requested_peak == 0 ? 1.0 : double(m.reserved_peak) / double(m.requested_peak));
  return buffer;
}

std::string oom_cell(const ReplayMetrics& m) {
  if (!m.oom_at_event) return "-";
  return std::to_string(*m.oom_at_event) + (m.ooms > 1 ? " (" + format_count(m.ooms) + ")" : "");
}

std::vector<uint64_t> values(const std::vector<ReplayMetrics>& rows, uint64_t ReplayMetrics::*field) {
  std::vector<uint64_t> out;
  for (const auto& m : rows) out.push_back(m.*field);
  return out;
}

bool any_skipped(const std::vector<ReplayMetrics>& rows) {
  for (const auto& m : rows)
    if (m.skipped_events > 0) return true;
  return false;
}

std::string footnotes(const std::vector<ReplayMetrics>& rows, const MetricsTableOptions& options) {
  std::string out =
      "(1) 1 - allocated/reserved at the peak: of the moments reserved memory stands at its peak, the first with the "
      "most allocated (reserved bytes never used while the peak held).\n"
      "(2) 1 - largest free range / all free bytes at that moment (how split the free space is, not how much).\n"
      "(3) " +
      std::string(kDeviceCallsDefinition) + (options.wide ? "" : "; each kind with --wide and in the JSON") +
      ".\n"
      "(4) " +
      kCompleteDefinition + ".\n";
  if (any_skipped(rows))
    out += "(5) events --lenient skipped as inconsistent with the live state: the numbers leave them out.\n";
  bool several_ooms = false;
  for (const auto& m : rows) several_ooms = several_ooms || m.ooms > 1;
  if (several_ooms) out += "OOM at event (n): the first failing allocation, and n allocations failed in all.\n";
  for (const auto& m : rows)
    if (const auto note = up_front_note(m)) out += *note + "\n";
  if (options.recommendation && rows.size() > 1)
    out += star_rule_text(options.recommendation->rule) +
           (options.recommendation->best ? "." : "; none qualifies, so none is starred.") + "\n";
  return out;
}

}  // namespace

std::optional<std::string> up_front_note(const ReplayMetrics& m) {
  const PolicyInfo* info = PolicyRegistry::instance().find(m.policy.substr(0, m.policy.find(':')));
  if (info == nullptr || info->reserves_up_front.empty()) return std::nullopt;
  const uint64_t limit = m.capacity.value_or(m.device_memory);
  if (m.reserved_peak * 4 < limit) return std::nullopt;  // it did not take a large share here
  const std::string device =
      m.device == "sim" ? "the simulated device's memory (the trace's GPU)" : "the device's memory";
  return m.policy + " reserves up front (at its first request) " + info->reserves_up_front + ": here " +
         format_bytes(m.reserved_peak) + ", with " + (m.capacity ? "a capacity of " : device + " ") +
         format_bytes(limit) + (m.capacity ? "" : "; --capacity sets a smaller one");
}

std::string metrics_table_text(const std::vector<ReplayMetrics>& rows, const MetricsTableOptions& options) {
  const ByteUnit reserved = byte_unit_for(values(rows, &ReplayMetrics::reserved_peak));
  const ByteUnit allocated = byte_unit_for(values(rows, &ReplayMetrics::allocated_peak));
  const ByteUnit requested = byte_unit_for(values(rows, &ReplayMetrics::requested_peak));
  std::vector<TextColumn> columns = {{"policy", true}, {"reserved\npeak " + reserved.name}, {"÷\nrequested"}};
  if (options.wide)
    columns.insert(columns.end(), {{"allocated\npeak " + allocated.name}, {"requested\npeak " + requested.name}});
  columns.insert(columns.end(), {{"unallocated\nat peak (1)"}, {"free space\nsplit (2)"}, {"device\ncalls (3)"}});
  if (options.wide)
    columns.insert(columns.end(), {{"mallocs"}, {"frees"}, {"maps"}, {"unmaps"}, {"pool\ngrows"}, {"pool\ntrims"}});
  columns.insert(columns.end(), {{"alloc\nretries"}, {"OOM at\nevent"}, {"complete\n(4)"}});
  const bool skipped = any_skipped(rows);  // a column of its own, only where --lenient skipped events
  if (skipped) columns.push_back({"skipped\nevents (5)"});

  std::vector<std::vector<std::string>> cells;
  for (size_t i = 0; i < rows.size(); ++i) {
    const ReplayMetrics& m = rows[i];
    const bool starred = options.recommendation && options.recommendation->best == i;
    std::string policy = options.wide ? m.policy : wrap_spec(m.policy, kPolicyWidth);
    std::string marked;  // "* " before the first line, two spaces before the others
    for (size_t start = 0; start <= policy.size();) {
      const size_t end = std::min(policy.find('\n', start), policy.size());
      marked += (start == 0 ? (starred ? "* " : "  ") : "\n  ") + policy.substr(start, end - start);
      start = end + 1;
    }
    std::vector<std::string> row = {marked, format_in_unit(m.reserved_peak, reserved), ratio(m)};
    if (options.wide)
      row.insert(row.end(), {format_in_unit(m.allocated_peak, allocated), format_in_unit(m.requested_peak, requested)});
    row.insert(row.end(), {format_percent(m.fragmentation_at_peak), format_percent(m.free_fragmentation_at_peak),
                           format_count(m.device_calls.total())});
    if (options.wide) {
      const DeviceCalls& d = m.device_calls;
      for (const uint64_t n : {d.mallocs, d.frees, d.maps, d.unmaps, d.pool_grows, d.pool_trims})
        row.push_back(format_count(n));
    }
    row.insert(row.end(), {format_count(m.alloc_retries), oom_cell(m), m.complete() ? "yes" : "NO"});
    if (skipped) row.push_back(format_count(m.skipped_events));
    cells.push_back(std::move(row));
  }
  return render_table(columns, cells) + wrap_text(footnotes(rows, options));
}

}  // namespace memreplay::results
