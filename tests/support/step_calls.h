// Device calls per training step of a replay, for the rule that a periodic trace makes no device
// call after its second step (tests/policies/memreplay_policy_test.cpp).
//
// A step is what the trace itself marks: PyTorch's optimizers run their step inside a
// record_function range ("Optimizer.step#AdamW.step"), which a snapshot keeps as
// external_annotations and the importer as annotation events, so a step ends at the END marker of
// such a range. A trace is periodic when it has at least three steps after the first and each of
// them allocates the same sizes in the same order as the one before (the first step also loads
// the model and the optimizer's state; the trace may end with an empty remainder after its last
// marker). A trace that begins mid-run (a ring buffer's) keeps the markers of steps it no longer
// holds, before its first allocation: those mark nothing and are left out.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "proto/frame_text.h"
#include "proto/trace_reader.h"
#include "replayer/replay_runner.h"
#include "replayer/replay_session.h"

namespace memreplay::testing {

struct StepCalls {
  std::vector<uint64_t> calls_by_step_end;  // device calls made by the end of each marked step
  uint64_t calls = 0;  // by the end of the replay
  // Requested sizes of each step's allocations, in order; one more entry than calls_by_step_end
  // (what follows the last marker).
  std::vector<std::vector<uint64_t>> step_sizes;

  bool periodic() const {
    uint64_t repeats = 0;
    for (size_t step = 1; step + 1 < step_sizes.size(); ++step) {
      if (step_sizes[step + 1].empty() && step + 2 == step_sizes.size()) break;  // the remainder
      if (step_sizes[step] != step_sizes[step + 1]) return false;
      ++repeats;
    }
    return repeats >= 2;
  }
  // Device calls after the end of the second step (0 when the trace has fewer steps).
  uint64_t calls_after_step(size_t step) const {
    return calls_by_step_end.size() >= step ? calls - calls_by_step_end[step - 1] : 0;
  }
};

inline bool is_optimizer_step_end(const KeyValues& annotation) {
  bool end = false;
  bool optimizer_step = false;
  for (const auto& [key, value] : annotation) {
    if (key == "stage") end = value == "END";
    if (key == "name") optimizer_step = std::string_view(value).starts_with("Optimizer.step");
  }
  return end && optimizer_step;
}

// Replays `options` (its trace and policy) and counts device calls at every step's end.
inline StepCalls replay_counting_steps(const ReplayOptions& options) {
  TraceReader reader(options.trace_path);
  auto [device, policy] = make_replay_target(reader, options);
  ReplaySession session(*policy, *device, options);
  // A named reference: clang cannot capture a structured binding.
  const Device& replay_device = *device;
  const auto calls = [&replay_device] {
    const DeviceCounters& c = replay_device.counters();
    return c.malloc_calls + c.map_calls + c.free_calls + c.unmap_calls;
  };
  StepCalls steps;
  steps.step_sizes.emplace_back();
  std::vector<Event> batch;
  uint64_t index = 0;
  while (reader.next_batch(batch)) {
    for (const Event& event : batch) {
      session.feed(event, index++);
      if (event.device != options.trace_device) continue;
      if (event.kind == EventKind::alloc && (event.flags & kPreexisting) == 0) {
        steps.step_sizes.back().push_back(event.size);
      } else if (event.kind == EventKind::annotation && (steps.step_sizes.size() > 1 || !steps.step_sizes[0].empty()) &&
                 is_optimizer_step_end(reader.annotation(event))) {
        steps.calls_by_step_end.push_back(calls());
        steps.step_sizes.emplace_back();
      }
    }
  }
  steps.calls = calls();
  return steps;
}

}  // namespace memreplay::testing
