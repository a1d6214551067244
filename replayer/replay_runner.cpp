#include "replayer/replay_runner.h"

#include <memory>
#include <vector>

#include "policies/registry.h"
#include "proto/input_error.h"
#include "replayer/device_registry.h"
#include "proto/trace_reader.h"

namespace memreplay {

ReplayMetrics run_replay(const ReplayRequest& request) {
  TraceReader reader(request.trace_path);
  ReplayOptions options = request.options;
  options.trace_name = request.trace_path;

  DeviceRequest device_request;
  device_request.capacity = request.capacity;
  for (const auto& d : reader.header().devices())
    if (d.index() == options.trace_device) device_request.total_memory = d.total_memory();
  auto device = DeviceRegistry::instance().create(request.device_spec, device_request);

  std::unique_ptr<Policy> policy;
  try {
    policy = PolicyRegistry::instance().create(request.policy_spec, *device);
  } catch (const PolicySpecError& e) {
    throw InputError("--policy " + request.policy_spec + ": " + e.what());
  }

  ReplaySession session(*policy, *device, options);
  std::vector<Event> batch;
  uint64_t index = 0;
  while (reader.next_batch(batch)) {
    if (!session.feed_batch(batch, index)) break;
    index += batch.size();
  }
  ReplayMetrics metrics = session.finish();
  metrics.policy = request.policy_spec;
  metrics.device = request.device_spec;
  return metrics;
}

FitResult find_min_capacity(const ReplayRequest& request, uint64_t resolution_bytes) {
  if (resolution_bytes == 0) resolution_bytes = 1;
  FitResult result;
  ReplayRequest probe = request;
  probe.capacity.reset();
  probe.options.continue_after_oom = false;
  result.uncapped = run_replay(probe);
  ++result.replays;
  if (result.uncapped.oom_at_event)
    throw InputError(request.trace_path + ": the replay runs out of memory even without a cap");

  uint64_t fits = result.uncapped.reserved_peak;
  uint64_t fails = result.uncapped.requested_peak == 0 ? 0 : result.uncapped.requested_peak - 1;
  while (fits - fails > resolution_bytes) {
    const uint64_t middle = fails + (fits - fails) / 2;
    probe.capacity = middle;
    const ReplayMetrics m = run_replay(probe);
    ++result.replays;
    (m.oom_at_event ? fails : fits) = middle;
  }
  result.min_fit_bytes = fits;
  result.max_fail_bytes = fails;
  result.resolution_bytes = fits - fails;
  return result;
}

}  // namespace memreplay
