#include "results/report_data.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "proto/schema_versions.h"
#include "proto/trace_reader.h"
#include "results/advice.h"
#include "results/metrics_table.h"
#include "results/peak_state.h"
#include "results/recommendation.h"
#include "results/replay_batch.h"
#include "results/report_series.h"

namespace memreplay::results {
namespace {

constexpr size_t kFramesPerStack = 4;

// Stack ids -> index into the report's table of stacks, with their top frames.
class StackTable {
 public:
  explicit StackTable(const std::string& trace) : reader_(trace) {}
  int index(uint32_t stack) {
    if (stack == 0) return -1;
    const auto [it, added] = ids_.try_emplace(stack, static_cast<int>(lines_.size()));
    if (added) {
      nlohmann::json frames = nlohmann::json::array();
      for (const auto& f : reader_.stack_frames(stack)) {
        if (frames.size() == kFramesPerStack) break;
        frames.push_back(frame_line(f));
      }
      lines_.push_back(std::move(frames));
    }
    return it->second;
  }
  const nlohmann::json& lines() const { return lines_; }

 private:
  TraceReader reader_;
  std::map<uint32_t, int> ids_;
  nlohmann::json lines_ = nlohmann::json::array();
};

// peak_state_json with the segments drawn, and each top stack's index into `stacks` (its colour
// in the segment map).
nlohmann::json peak_json(const PeakState& peak, StackTable& stacks, const std::string& trace) {
  nlohmann::json segments = nlohmann::json::array();
  for (const auto& s : peak.segments) {
    nlohmann::json blocks = nlohmann::json::array();
    for (const auto& b : s.blocks) blocks.push_back({b.offset, b.size, b.requested, stacks.index(b.stack)});
    segments.push_back({s.address, s.size, blocks});
  }
  nlohmann::json out = peak_state_json(peak, stack_lines(trace, peak.top_stacks));
  out["segments"] = segments;
  for (size_t i = 0; i < peak.top_stacks.size(); ++i)
    out["top_stacks"][i]["stack"] = stacks.index(peak.top_stacks[i].stack);
  return out;
}

// Events the trace holds: the replay sees at most these, so a timeline this long never merges two.
size_t events_in(const std::string& trace) {
  TraceReader reader(trace);
  if (const auto* footer = reader.footer()) return footer->total_events();
  const auto loss = reader.loss();
  return loss ? loss->whole_events : 0;
}

}  // namespace

const std::vector<std::string>& default_report_policies() {
  static const std::vector<std::string> policies = {"pytorch", "pytorch:expandable_segments:True"};
  return policies;
}

nlohmann::json build_report_data(const ReplayOptions& base_options, const std::vector<std::string>& policies,
                                 double max_call_ratio) {
  ReplayOptions base = base_options;
  base.timeline_points = events_in(base.trace_path) + 1;  // one point per event: every value exact
  const TraceReplays replays = replay_policies(base, policies);

  // The x axis: the longest timeline (a replay that ran out of memory stops early).
  size_t longest = 0;
  for (size_t i = 1; i < replays.metrics.size(); ++i)
    if (replays.metrics[i].timeline.size() > replays.metrics[longest].timeline.size()) longest = i;
  std::vector<uint64_t> time_ns, requested;
  const auto& timeline = replays.metrics[longest].timeline;
  const uint64_t time0 = timeline.empty() ? 0 : timeline.front().time_ns;  // JS numbers are exact below 2^53
  for (size_t i = 0; i < timeline.size(); ++i) {
    // One point per event, numbered on from the first (the page's x axis is first_event + index).
    if (timeline[i].event != timeline[0].event + i)
      throw std::logic_error("report timeline merged events at point " + std::to_string(i));
    time_ns.push_back(timeline[i].time_ns - std::min(timeline[i].time_ns, time0));
    requested.push_back(timeline[i].requested);
  }

  // The star: the one rule of results/recommendation.h, the first policy as the current setting.
  const CallRule rule = call_rule_for(base, policies.front(), replays.metrics.front(), max_call_ratio);
  const Recommendation recommendation = recommend(replays.metrics, rule);

  StackTable stacks(base.trace_path);
  nlohmann::json rows = nlohmann::json::array();
  for (size_t i = 0; i < policies.size(); ++i) {
    const ReplayMetrics& m = replays.metrics[i];
    // Allocated as its excess over requested (rounding, unsplit slack): that moves rarely, so it packs small.
    std::vector<uint64_t> reserved, allocated, slack;
    for (const auto& p : m.timeline) {
      reserved.push_back(p.reserved);
      allocated.push_back(p.allocated);
      slack.push_back(p.allocated - p.requested);
    }
    ReplayOptions one = base;
    one.policy_spec = policies[i];
    const PeakState peak = capture_peak_state(one, m);
    const DeviceCalls& d = m.device_calls;
    const auto note = up_front_note(m);
    rows.push_back({{"policy", policies[i]},
                    {"paste", paste_for(policies[i])},
                    {"starred", recommendation.best == i},
                    {"reserves_up_front", note ? nlohmann::json(*note) : nullptr},
                    {"metrics",
                     {{"reserved_peak", m.reserved_peak},
                      {"allocated_peak", m.allocated_peak},
                      {"requested_peak", m.requested_peak},
                      {"overhead", m.requested_peak == 0 ? 1.0 : double(m.reserved_peak) / double(m.requested_peak)},
                      {"unallocated_at_peak", m.fragmentation_at_peak},
                      {"unallocated_at_peak_max", m.fragmentation_at_peak_max},
                      {"free_fragmentation_at_peak", m.free_fragmentation_at_peak},
                      {"device_calls", d.total()},
                      {"device_calls_by_kind", to_json(d)},
                      {"ooms", m.ooms},
                      {"oom_at_event", m.oom_at_event ? nlohmann::json(*m.oom_at_event) : nullptr},
                      {"complete", m.complete()}}},
                    {"points", m.timeline.size()},
                    {"reserved", encode_levels(reserved, reserved)},
                    {"allocated", encode_levels(allocated, slack)},
                    {"peak", peak_json(peak, stacks, base.trace_path)}});
  }

  ReplayOptions current = base;
  current.timeline_points = 1024;
  const Advice advice = advise(current, policies.front(), true, rule.max_call_ratio);
  const auto advice_frames = stack_lines(base.trace_path, advice.peak.top_stacks);

  return {{"schema", "memreplay-report"},
          {"schema_version", schema::kReportData},
          {"trace", std::filesystem::path(base.trace_path).filename().string()},
          {"complete", replays.complete},
          {"capacity", base.capacity ? nlohmann::json(*base.capacity) : nullptr},
          {"device_memory", replays.metrics.front().device_memory},
          {"star_rule", star_rule_text(rule)},
          {"device_calls_definition", kDeviceCallsDefinition},
          {"series",
           {{"points", timeline.size()},
            {"first_event", timeline.empty() ? 0 : timeline.front().event},
            {"chunk", kSeriesChunk},
            {"level_factor", kLevelFactor},
            {"time0_ns", std::to_string(time0)},
            {"time_ns", encode_chunks(time_ns)},
            {"requested", encode_levels(requested, requested)}}},
          {"stacks", stacks.lines()},
          {"policies", rows},
          {"advice", advice_json(advice, advice_frames)},
          {"advice_text", advice_text(advice, advice_frames)}};
}

}  // namespace memreplay::results
