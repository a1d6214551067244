#include "results/report_data.h"

#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "proto/trace_reader.h"
#include "results/advice.h"
#include "results/check.h"
#include "results/peak_state.h"
#include "results/replay_batch.h"

namespace memreplay::results {
namespace {

constexpr size_t kTimelinePoints = size_t{1} << 20;
constexpr size_t kFramesPerStack = 4;

std::string base64(const std::string& bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const uint32_t b0 = static_cast<unsigned char>(bytes[i]);
    const uint32_t b1 = i + 1 < bytes.size() ? static_cast<unsigned char>(bytes[i + 1]) : 0;
    const uint32_t b2 = i + 2 < bytes.size() ? static_cast<unsigned char>(bytes[i + 2]) : 0;
    const uint32_t triple = (b0 << 16) | (b1 << 8) | b2;
    out.push_back(kAlphabet[(triple >> 18) & 63]);
    out.push_back(kAlphabet[(triple >> 12) & 63]);
    out.push_back(i + 1 < bytes.size() ? kAlphabet[(triple >> 6) & 63] : '=');
    out.push_back(i + 2 < bytes.size() ? kAlphabet[triple & 63] : '=');
  }
  return out;
}

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
        frames.push_back(f.filename + ":" + std::to_string(f.line) + " " + f.name);
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

nlohmann::json peak_json(const PeakState& peak, StackTable& stacks, const std::string& trace) {
  nlohmann::json segments = nlohmann::json::array();
  for (const auto& s : peak.segments) {
    nlohmann::json blocks = nlohmann::json::array();
    for (const auto& b : s.blocks) blocks.push_back({b.offset, b.size, b.requested, stacks.index(b.stack)});
    segments.push_back({s.address, s.size, blocks});
  }
  nlohmann::json top = nlohmann::json::array();
  const auto frames = stack_lines(trace, peak.top_stacks);
  for (size_t i = 0; i < peak.top_stacks.size(); ++i)
    top.push_back({{"bytes", peak.top_stacks[i].bytes}, {"blocks", peak.top_stacks[i].blocks}, {"frames", frames[i]}});
  return {{"found", peak.found},       {"replay_event", peak.replay_event}, {"trace_event", peak.trace_event},
          {"reserved", peak.reserved}, {"allocated", peak.allocated},       {"requested", peak.requested},
          {"segments", segments},      {"top_stacks", top}};
}

}  // namespace

std::string encode_series(const std::vector<uint64_t>& values) {
  std::string varints;
  varints.reserve(values.size() * 2);
  const auto put = [&](uint64_t v) {
    while (v >= 0x80) {
      varints.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    varints.push_back(static_cast<char>(v));
  };
  uint64_t previous = 0;
  for (size_t i = 0; i < values.size();) {
    const int64_t delta = static_cast<int64_t>(values[i] - previous);
    // The same delta again and again (a flat reserved line, the x axis): one entry and a count.
    size_t run = 1;
    while (i + run < values.size() && static_cast<int64_t>(values[i + run] - values[i + run - 1]) == delta) ++run;
    const uint64_t zigzag = (static_cast<uint64_t>(delta) << 1) ^ static_cast<uint64_t>(delta >> 63);
    put(zigzag * 2 + (run > 1 ? 1 : 0));
    if (run > 1) put(run - 1);
    previous = values[i + run - 1];
    i += run;
  }
  uLongf size = compressBound(varints.size());
  std::string packed(size, '\0');
  if (compress2(reinterpret_cast<Bytef*>(packed.data()), &size, reinterpret_cast<const Bytef*>(varints.data()),
                varints.size(), 6) != Z_OK)
    throw std::runtime_error("zlib could not compress a report series");
  packed.resize(size);
  return base64(packed);
}

nlohmann::json build_report_data(const ReplayOptions& base_options, const std::vector<std::string>& policies) {
  ReplayOptions base = base_options;
  base.timeline_points = kTimelinePoints;
  const TraceReplays replays = replay_policies(base, policies);

  // The x axis: the longest timeline (a replay that ran out of memory stops early).
  size_t longest = 0;
  for (size_t i = 1; i < replays.metrics.size(); ++i)
    if (replays.metrics[i].timeline.size() > replays.metrics[longest].timeline.size()) longest = i;
  std::vector<uint64_t> x, time_ns, requested;
  const auto& timeline = replays.metrics[longest].timeline;
  const uint64_t time0 = timeline.empty() ? 0 : timeline.front().time_ns;  // JS numbers are exact below 2^53
  for (const auto& p : timeline) {
    x.push_back(p.event);
    time_ns.push_back(p.time_ns - std::min(p.time_ns, time0));
    requested.push_back(p.requested);
  }
  const uint64_t bucket = x.size() > 1 ? x[1] - x[0] : 1;

  StackTable stacks(base.trace_path);
  nlohmann::json rows = nlohmann::json::array();
  for (size_t i = 0; i < policies.size(); ++i) {
    const ReplayMetrics& m = replays.metrics[i];
    // Allocated as its excess over requested (rounding, unsplit slack): that moves rarely, so it packs small.
    std::vector<uint64_t> reserved, slack;
    for (const auto& p : m.timeline) reserved.push_back(p.reserved), slack.push_back(p.allocated - p.requested);
    ReplayOptions one = base;
    one.policy_spec = policies[i];
    one.timeline_points = 1;
    one.follow_recorded_placement = m.recorded_placement;  // placed as the replay that found the peak
    const PeakState peak = capture_peak_state(one, m.reserved_peak);
    rows.push_back({{"policy", policies[i]},
                    {"paste", paste_for(policies[i])},
                    {"metrics",
                     {{"reserved_peak", m.reserved_peak},
                      {"allocated_peak", m.allocated_peak},
                      {"requested_peak", m.requested_peak},
                      {"overhead", m.requested_peak == 0 ? 1.0 : double(m.reserved_peak) / double(m.requested_peak)},
                      {"unallocated_at_peak", m.fragmentation_at_peak},
                      {"free_fragmentation_at_peak", m.free_fragmentation_at_peak},
                      {"device_calls", total_device_calls(m)},
                      {"oom_at_event", m.oom_at_event ? nlohmann::json(*m.oom_at_event) : nullptr}}},
                    {"points", m.timeline.size()},
                    {"reserved", encode_series(reserved)},
                    {"allocated_over_requested", encode_series(slack)},
                    {"peak", peak_json(peak, stacks, base.trace_path)}});
  }

  ReplayOptions current = base;
  current.timeline_points = 1024;
  const Advice advice = advise(current, policies.front(), true);
  const auto advice_frames = stack_lines(base.trace_path, advice.peak.top_stacks);

  return {{"schema", "memreplay-report"},
          {"schema_version", kReportDataSchemaVersion},
          {"trace", std::filesystem::path(base.trace_path).filename().string()},
          {"complete", replays.complete},
          {"capacity", base.capacity ? nlohmann::json(*base.capacity) : nullptr},
          {"series",
           {{"points", x.size()},
            {"time0_ns", std::to_string(time0)},
            {"bucket_events", bucket},
            {"x", encode_series(x)},
            {"time_ns", encode_series(time_ns)},
            {"requested", encode_series(requested)}}},
          {"stacks", stacks.lines()},
          {"policies", rows},
          {"advice", advice_json(advice, advice_frames)},
          {"advice_text", advice_text(advice, advice_frames)}};
}

}  // namespace memreplay::results
