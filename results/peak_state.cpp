#include "results/peak_state.h"

#include <algorithm>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "base/text_escape.h"
#include "proto/trace_reader.h"
#include "replayer/replay_runner.h"
#include "replayer/replay_session.h"
#include "results/observing_policy.h"

namespace memreplay::results {
namespace {

PeakState describe(const Device& device, const ObservingPolicy& observer, size_t top_stacks) {
  PeakState state;
  state.found = true;
  state.reserved = device.counters().reserved_bytes;
  for (const auto& [start, end] : device.backed_ranges()) state.segments.push_back({start, end - start, {}});
  std::map<uint32_t, StackBytes> by_stack;
  for (const auto& [address, block] : observer.live_blocks()) {
    state.allocated += block.size;
    state.requested += block.requested;
    auto& s = by_stack[block.stack];
    s.stack = block.stack;
    s.bytes += block.requested;
    ++s.blocks;
    // The segment holding it: the last one starting at or before its address.
    auto segment = std::upper_bound(state.segments.begin(), state.segments.end(), address,
                                    [](uint64_t a, const PeakSegment& s) { return a < s.address; });
    if (segment == state.segments.begin()) continue;
    --segment;
    if (address >= segment->address + segment->size) continue;
    segment->blocks.push_back({address - segment->address, block.size, block.requested, block.stack});
  }
  for (const auto& [_, s] : by_stack) state.top_stacks.push_back(s);
  std::sort(state.top_stacks.begin(), state.top_stacks.end(),
            [](const StackBytes& a, const StackBytes& b) { return a.bytes > b.bytes; });
  if (state.top_stacks.size() > top_stacks) state.top_stacks.resize(top_stacks);
  return state;
}

}  // namespace

PeakState capture_peak_state(const ReplayOptions& options, const ReplayMetrics& measured, size_t top_stacks) {
  if (!measured.peak_trace_event) return {};
  const uint64_t peak_event = *measured.peak_trace_event;
  ReplayOptions placed = options;
  placed.follow_recorded_placement = measured.recorded_placement;
  placed.timeline_points = 1;
  TraceReader reader(placed.trace_path);
  read_trace_header(reader.header(), placed);
  auto [device, policy] = make_replay_target(reader, placed);
  ObservingPolicy observer(*policy, false, true);
  ReplaySession session(observer, *device, placed);

  std::vector<Event> batch;
  uint64_t index = 0, replay_index = 0;
  while (reader.next_batch(batch)) {
    for (size_t i = 0; i < batch.size(); ++i) {
      const Event& e = batch[i];
      if (e.device == placed.trace_device && e.kind == EventKind::alloc) observer.set_current_stack(e.stack);
      if (!session.feed(e, index + i)) return {};
      if (e.device != placed.trace_device) continue;
      const bool replayed =
          (e.kind == EventKind::alloc && !e.has_flag(kPreexisting)) || e.kind == EventKind::free_completed;
      if (replayed) ++replay_index;
      if (index + i == peak_event) {
        PeakState state = describe(*device, observer, top_stacks);
        state.replay_event = replay_index == 0 ? 0 : replay_index - 1;
        state.trace_event = peak_event;
        return state;
      }
    }
    index += batch.size();
  }
  return {};
}

}  // namespace memreplay::results

namespace memreplay::results {

std::string frame_line(const FrameText& frame) {
  return frame.filename + ":" + std::to_string(frame.line) + " " + frame.name;
}

std::vector<std::vector<std::string>> stack_lines(const std::string& trace_path,
                                                  const std::vector<StackBytes>& stacks) {
  TraceReader reader(trace_path);
  std::vector<std::vector<std::string>> out;
  for (const auto& s : stacks) {
    std::vector<std::string> lines;
    if (s.stack != 0)
      for (const auto& f : reader.stack_frames(s.stack)) lines.push_back(frame_line(f));
    out.push_back(std::move(lines));
  }
  return out;
}

std::vector<std::vector<std::string>> terminal_safe_frames(std::vector<std::vector<std::string>> stacks) {
  for (auto& stack : stacks)
    for (auto& frame : stack) frame = terminal_safe(frame);
  return stacks;
}

nlohmann::json peak_state_json(const PeakState& peak, const std::vector<std::vector<std::string>>& frames) {
  nlohmann::json top = nlohmann::json::array();
  for (size_t i = 0; i < peak.top_stacks.size(); ++i)
    top.push_back({{"bytes", peak.top_stacks[i].bytes}, {"blocks", peak.top_stacks[i].blocks}, {"frames", frames[i]}});
  return {{"found", peak.found},       {"replay_event", peak.replay_event}, {"trace_event", peak.trace_event},
          {"reserved", peak.reserved}, {"allocated", peak.allocated},       {"requested", peak.requested},
          {"top_stacks", top}};
}

}  // namespace memreplay::results
