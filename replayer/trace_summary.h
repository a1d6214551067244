// What `memreplay info` reports about a trace: events per kind, devices, streams, duration, and the
// peak of live requested bytes (the policy-independent lower bound) with the stacks live there.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <array>
#include <span>
#include <unordered_map>
#include <vector>

#include "proto/event.h"

namespace memreplay {

struct StackShare {
  uint32_t stack = 0;  // 0 = no stack recorded
  uint64_t bytes = 0;  // live requested bytes from this stack at the peak
  uint64_t blocks = 0;
};

struct DeviceSummary {
  uint32_t device = 0;
  std::map<std::string, uint64_t> events_per_kind;  // keyed by PyTorch action names
  std::set<uint64_t> streams;
  uint64_t first_time_ns = 0;
  uint64_t last_time_ns = 0;
  uint64_t peak_requested_bytes = 0;
  uint64_t peak_event = 0;  // index in the whole trace of the event that reached the peak
  uint64_t peak_time_ns = 0;
  std::vector<StackShare> top_stacks_at_peak;  // largest first
};

// Two passes over the same events: the first finds each device's peak, the second collects the
// blocks live at it. Feed all events to add() in the first pass, call start_second_pass(), feed
// them again to add(), then finish().
class TraceSummarizer {
 public:
  explicit TraceSummarizer(size_t top_stacks = 10) : top_stacks_(top_stacks) {}
  void add(std::span<const Event> events, uint64_t first_index);
  void start_second_pass();
  std::vector<DeviceSummary> finish();

 private:
  struct Live {
    uint64_t requested;
    uint32_t stack;
  };
  struct DeviceState {
    DeviceSummary summary;
    std::unordered_map<uint64_t, Live> live;
    uint64_t live_bytes = 0;
    bool captured = false;
    std::array<uint64_t, kEventKindCount> kind_counts{};
    std::unordered_map<uint32_t, StackShare> stacks_at_peak;
  };
  void add_one(const Event& event, uint64_t index);

  size_t top_stacks_;
  bool second_pass_ = false;
  std::map<uint32_t, DeviceState> devices_;
};

}  // namespace memreplay
