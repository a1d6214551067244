#include "replayer/replay_runner.h"

#include <memory>
#include <vector>

#include "policies/registry.h"
#include "proto/input_error.h"
#include "proto/trace_reader.h"
#include "replayer/device_registry.h"
#include "replayer/replay_session.h"

namespace memreplay {

ReplayTarget make_replay_target(const TraceReader& reader, const ReplayOptions& options) {
  DeviceRequest device_request;
  device_request.capacity = options.capacity;
  for (const auto& d : reader.header().devices())
    if (d.index() == options.trace_device) device_request.total_memory = d.total_memory();
  ReplayTarget target;
  target.device = DeviceRegistry::instance().create(options.device_spec, device_request);
  try {
    target.policy = PolicyRegistry::instance().create(options.policy_spec, *target.device);
  } catch (const PolicySpecError& e) {
    throw InputError("--policy " + options.policy_spec + ": " + e.what());
  }
  return target;
}

ReplayMetrics run_replay(const ReplayOptions& options) {
  TraceReader reader(options.trace_path);
  auto [device, policy] = make_replay_target(reader, options);

  ReplayOptions session_options = options;
  session_options.check_pools = options.check_pools || reader.header().pools_size() > 0;
  ReplaySession session(*policy, *device, session_options);
  std::vector<Event> batch;
  uint64_t index = 0;
  while (reader.next_batch(batch)) {
    if (!session.feed_batch(batch, index)) break;
    index += batch.size();
  }
  ReplayMetrics metrics = session.finish();
  metrics.policy = options.policy_spec;
  metrics.device = options.device_spec;
  if (auto loss = reader.loss()) {
    metrics.complete = false;
    metrics.loss = TraceLoss{loss->whole_events, loss->lost_bytes, loss->file_bytes, std::move(loss->reason)};
  }
  return metrics;
}

ReplayMetrics run_uncapped_replay(const ReplayOptions& options) {
  ReplayOptions uncapped = options;
  uncapped.capacity.reset();
  uncapped.continue_after_oom = false;
  ReplayMetrics m = run_replay(uncapped);
  if (m.oom_at_event) throw InputError(options.trace_path + ": the replay runs out of memory even without a cap");
  return m;
}

FitResult find_min_capacity(const ReplayOptions& options, uint64_t resolution_bytes) {
  if (resolution_bytes == 0) resolution_bytes = 1;
  FitResult result;
  result.uncapped = run_uncapped_replay(options);
  ++result.replays;
  ReplayOptions probe = options;
  probe.continue_after_oom = false;

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
