// What `memreplay validate` checks: every event consistent with the live state before it.
// Problems are named with the event's index in the trace.
//
// Pools (check_pools: for traces whose header names private pools, where every block lives in a
// recorded segment): an alloc inside no live segment of its pool, a free into another pool
// ("pool_mismatch", pool_consistency.h). A device call that failed (kFailed) changed nothing and
// is not checked.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "proto/event.h"
#include "replayer/pool_consistency.h"

namespace memreplay {

struct TraceProblem {
  uint64_t event = 0;
  std::string kind;  // "free_unknown_address", "double_alloc", "overlapping_blocks", "time_backwards",
                     // "pool_mismatch"
  std::string message;
};

class TraceValidator {
 public:
  explicit TraceValidator(size_t max_reported = 100, bool check_pools = false)
      : max_reported_(max_reported), check_pools_(check_pools) {}
  void add(std::span<const Event> events, uint64_t first_index);
  const std::vector<TraceProblem>& problems() const { return problems_; }
  uint64_t problem_count() const { return problem_count_; }
  std::map<std::string, uint64_t> counts_by_kind() const { return counts_; }

 private:
  struct DeviceState {
    std::map<uint64_t, uint64_t> live;  // block address -> requested bytes (pending frees too)
    uint64_t last_time_ns = 0;
    PoolConsistency pools;
  };
  void add_one(const Event& event, uint64_t index);
  void report(uint64_t index, const std::string& kind, const std::string& message);

  size_t max_reported_;
  bool check_pools_;
  uint64_t problem_count_ = 0;
  std::vector<TraceProblem> problems_;
  std::map<std::string, uint64_t> counts_;
  std::map<uint32_t, DeviceState> devices_;
};

}  // namespace memreplay
