// ReplayOptions: everything one replay is asked to do. The CLI fills it in (tools/cli/
// tools/cli/replay_flags.cpp binds the flags), run_replay() reads the trace, device and policy from it
// and ReplaySession takes the rest.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace memreplay {

struct ReplayOptions {
  std::string trace_path;  // the .mrt file; named in every error about its events
  std::string policy_spec = "pytorch";  // NAME[:OPTIONS]
  std::string device_spec = "sim";  // NAME[:INDEX]
  std::optional<uint64_t> capacity;  // per-process cap in bytes
  uint32_t trace_device = 0;  // which recorded device's events to replay
  bool lenient = false;  // count and skip inconsistent events instead of failing
  bool continue_after_oom = false;
  size_t timeline_points = 1024;
  // Time every allocate/free and split the latencies into served-from-cache and
  // needed-a-device-call (costs two clock reads per operation; for real-GPU runs).
  bool time_operations = false;
  // Check the trace's pool assignment (pool_consistency.h): run_replay sets it for traces whose
  // header names private pools.
  bool check_pools = false;
  // Place cudaMallocs where the trace recorded them while the replay makes the trace's own calls
  // (replayer/recorded_placement.h). run_replay replays again without, when a replay left them.
  bool follow_recorded_placement = true;
  // For a trace that starts mid-run (kPreexisting events): replay only the run's own allocations,
  // from an empty pool: the starting segments and the blocks live then are left out (a free of
  // such a block is no error). The reserved memory then does not depend on what was allocated or
  // cached before the recording began (the pytest plugin's limits).
  bool from_empty_pool = false;
  // What the trace says of CUDA graph captures (run_replay sets them from its header): whether
  // every alloc made under a capture carries kCaptured, and the pools that are a capture's own
  // (kind "graph"). The session tells the policy each private-pool allocation's Capture.
  bool captures_flagged = false;
  std::vector<uint16_t> capture_pools;
};

}  // namespace memreplay
