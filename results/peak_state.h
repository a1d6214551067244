// The allocator's state at the moment at the reserved peak (ReplayMetrics::peak_trace_event: of the
// moments the peak holds, the first with the most bytes allocated): every segment (backed device
// range) with its blocks, and the stacks that own the live bytes. Found by replaying again up to
// that event.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "proto/frame_text.h"
#include "replayer/metrics.h"
#include "replayer/replay_options.h"

namespace memreplay::results {

struct PeakBlock {
  uint64_t offset = 0;  // from the start of its segment
  uint64_t size = 0;
  uint64_t requested = 0;
  uint32_t stack = 0;
};

struct PeakSegment {
  uint64_t address = 0;  // device address (simulated)
  uint64_t size = 0;
  std::vector<PeakBlock> blocks;  // by offset; the rest of the segment is free
};

struct StackBytes {
  uint32_t stack = 0;
  uint64_t bytes = 0;  // requested bytes live from this stack
  uint64_t blocks = 0;
};

struct PeakState {
  bool found = false;  // false when the replay had no moment between events (no event replayed)
  uint64_t replay_event = 0;  // index over alloc + free_completed events
  uint64_t trace_event = 0;
  uint64_t reserved = 0;
  uint64_t allocated = 0;
  uint64_t requested = 0;
  std::vector<PeakSegment> segments;  // by address
  std::vector<StackBytes> top_stacks;  // largest first, at most `top_stacks`
};

// Replays `options` (its policy, device and capacity) up to `measured`'s peak_trace_event, placed as
// the replay that measured it (measured.recorded_placement).
PeakState capture_peak_state(const ReplayOptions& options, const ReplayMetrics& measured, size_t top_stacks = 10);

}  // namespace memreplay::results

namespace memreplay::results {

// "file:line name": a frame as every view of a stack shows it.
std::string frame_line(const FrameText& frame);
// frame_line for each frame (innermost first) of each stack in `stacks`.
std::vector<std::vector<std::string>> stack_lines(const std::string& trace_path, const std::vector<StackBytes>& stacks);
// The same lines as a terminal may show them (terminal_safe, base/text_escape.h): what advise
// prints; its JSON keeps them as recorded.
std::vector<std::vector<std::string>> terminal_safe_frames(std::vector<std::vector<std::string>> stacks);

// {found, replay_event, trace_event, reserved, allocated, requested, top_stacks: [{bytes, blocks,
// frames}]}, with `frames` the stack_lines of peak.top_stacks: the peak as the report's page draws
// it (which adds the segments) and as the Python API's peak_state returns it.
nlohmann::json peak_state_json(const PeakState& peak, const std::vector<std::vector<std::string>>& frames);

}  // namespace memreplay::results
