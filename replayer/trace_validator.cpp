#include "replayer/trace_validator.h"

#include "replayer/hex.h"

namespace memreplay {

void TraceValidator::add(std::span<const Event> events, uint64_t first_index) {
  for (size_t i = 0; i < events.size(); ++i) add_one(events[i], first_index + i);
}

void TraceValidator::report(uint64_t index, const std::string& kind, const std::string& message) {
  ++problem_count_;
  ++counts_[kind];
  if (problems_.size() < max_reported_) problems_.push_back({index, kind, message});
}

void TraceValidator::add_one(const Event& event, uint64_t index) {
  DeviceState& state = devices_[event.device];
  if (event.has_flag(kFailed)) return;  // a device call that failed: nothing changed
  if (event.time_ns != 0) {
    if (event.time_ns < state.last_time_ns)
      report(index, "time_backwards",
             "time goes backwards by " + std::to_string(state.last_time_ns - event.time_ns) + " ns");
    else
      state.last_time_ns = event.time_ns;
  }
  switch (event.kind) {
    case EventKind::alloc: {
      if (state.live.contains(event.address)) {
        report(index, "double_alloc", "alloc at " + hex_address(event.address) + ", which is already live");
        return;
      }
      const auto next = state.live.lower_bound(event.address);
      const bool overlaps_next = next != state.live.end() && next->first < event.address + event.size;
      bool overlaps_prev = false;
      if (next != state.live.begin()) {
        const auto prev = std::prev(next);
        overlaps_prev = prev->first + prev->second > event.address;
      }
      if (overlaps_next || overlaps_prev) {
        report(index, "overlapping_blocks",
               "alloc of " + std::to_string(event.size) + " bytes at " + hex_address(event.address) +
                   " overlaps a live block");
        return;
      }
      state.live.emplace(event.address, event.size);
      if (check_pools_)
        if (auto problem = state.pools.on_alloc(event)) report(index, "pool_mismatch", *problem);
      break;
    }
    case EventKind::segment_alloc:
    case EventKind::segment_map:
    case EventKind::segment_free:
    case EventKind::segment_unmap:
      if (check_pools_) state.pools.on_segment(event);
      break;
    case EventKind::free_requested:
      if (!state.live.contains(event.address))
        report(index, "free_unknown_address",
               "free_requested of " + hex_address(event.address) + ", which is not live");
      break;
    case EventKind::free_completed:
      if (state.live.erase(event.address) == 0)
        report(index, "free_unknown_address",
               "free_completed of " + hex_address(event.address) + ", which is not live");
      else if (check_pools_)
        if (auto problem = state.pools.on_free(event)) report(index, "pool_mismatch", *problem);
      break;
    default: break;
  }
}

}  // namespace memreplay
