#include "replayer/sim/recorded_placement.h"

namespace memreplay {

void RecordedPlacement::leave() {
  in_step_ = false;
  recorded_ahead_.clear();
  replay_ahead_.clear();
}

void RecordedPlacement::recorded_malloc(uint64_t address, uint64_t bytes) {
  if (!in_step_) return;
  // The replay freed something the trace does not free before this malloc.
  if (!replay_ahead_.empty() || malloc_unmade() || recorded_ahead_.size() >= kMaxAhead) return leave();
  recorded_ahead_.push_back({false, address, bytes});
}

void RecordedPlacement::recorded_free(uint64_t address) {
  if (!in_step_) return;
  if (malloc_unmade()) return leave();
  if (!replay_ahead_.empty()) {
    if (replay_ahead_.front() != address) return leave();
    replay_ahead_.pop_front();
    return;
  }
  if (recorded_ahead_.size() >= kMaxAhead) return leave();
  recorded_ahead_.push_back({true, address, 0});
}

std::optional<uint64_t> RecordedPlacement::replay_malloc(uint64_t bytes,
                                                         const std::function<bool(uint64_t)>& can_take) {
  if (!in_step_) return std::nullopt;
  if (!replay_ahead_.empty() || recorded_ahead_.empty()) {
    leave();
    return std::nullopt;
  }
  const Call next = recorded_ahead_.front();
  if (next.is_free || next.bytes != bytes || !can_take(next.address)) {
    leave();
    return std::nullopt;
  }
  recorded_ahead_.pop_front();
  followed_ = true;
  return next.address;
}

void RecordedPlacement::replay_free(uint64_t address) {
  if (!in_step_) return;
  if (!recorded_ahead_.empty()) {
    const Call next = recorded_ahead_.front();
    if (!next.is_free || next.address != address) return leave();
    recorded_ahead_.pop_front();
    return;
  }
  if (replay_ahead_.size() >= kMaxAhead) return leave();
  replay_ahead_.push_back(address);
}

}  // namespace memreplay
