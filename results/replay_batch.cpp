#include "results/replay_batch.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <memory>
#include <thread>

#include "policies/registry.h"
#include "proto/trace_reader.h"
#include "replayer/pool_consistency.h"
#include "replayer/replay_runner.h"
#include "replayer/replay_session.h"
#include "results/observing_policy.h"

namespace memreplay::results {
namespace {

// One policy's replay: the device and policy live as long as the session that uses them.
struct Lane {
  std::unique_ptr<Device> device;
  std::unique_ptr<Policy> policy;
  std::unique_ptr<ObservingPolicy> observer;  // only to drop empty_cache()
  std::unique_ptr<ReplaySession> session;
};

}  // namespace

TraceReplays replay_policies(const ReplayOptions& base, const std::vector<std::string>& policy_specs) {
  std::vector<ReplayLane> lanes;
  for (const auto& spec : policy_specs) lanes.push_back({spec, false});
  return replay_lanes(base, lanes);
}

TraceReplays replay_lanes(const ReplayOptions& base, const std::vector<ReplayLane>& specs) {
  TraceReader reader(base.trace_path);
  std::vector<Lane> lanes;
  lanes.reserve(specs.size());
  for (const auto& [spec, ignore_empty_cache] : specs) {
    Lane lane;
    ReplayOptions options = base;
    options.policy_spec = spec;
    read_trace_header(reader.header(), options);
    auto target = make_replay_target(reader, options);
    lane.device = std::move(target.device);
    lane.policy = std::move(target.policy);
    Policy* replayed = lane.policy.get();
    if (ignore_empty_cache) {
      lane.observer = std::make_unique<ObservingPolicy>(*lane.policy, true, false);
      replayed = lane.observer.get();
    }
    lane.session = std::make_unique<ReplaySession>(*replayed, *lane.device, options);
    lanes.push_back(std::move(lane));
  }

  std::vector<Event> batch;
  uint64_t index = 0;
  size_t running = lanes.size();
  // A lane whose device left the trace's recorded placement stops at once and is replayed again
  // by the placement model throughout (replay_runner.h).
  const auto left = [](const Lane& lane) { return lane.device->left_recorded_placement(); };
  while (running > 0 && reader.next_batch(batch)) {
    for (auto& lane : lanes)
      if (!lane.session->stopped() && !left(lane) && (!lane.session->feed_batch(batch, index) || left(lane))) --running;
    index += batch.size();
  }

  std::vector<ReplayLane> again;
  for (size_t i = 0; i < lanes.size(); ++i)
    if (left(lanes[i])) again.push_back(specs[i]);
  TraceReplays by_model;
  if (!again.empty()) {
    ReplayOptions model_base = base;
    model_base.follow_recorded_placement = false;
    by_model = replay_lanes(model_base, again);
  }

  TraceReplays out;
  out.complete = reader.complete();
  for (size_t i = 0, next_again = 0; i < lanes.size(); ++i) {
    if (left(lanes[i])) {
      out.metrics.push_back(std::move(by_model.metrics[next_again++]));
      continue;
    }
    ReplayMetrics m = lanes[i].session->finish();
    m.policy = specs[i].policy;
    m.device = base.device_spec;
    m.recorded_placement = base.follow_recorded_placement;
    note_trace_loss(reader, m);
    out.metrics.push_back(std::move(m));
  }
  return out;
}

std::vector<std::string> expand_policy_specs(const std::vector<std::string>& specs) {
  std::vector<std::string> out;
  const auto add = [&](const std::string& spec) {
    if (std::find(out.begin(), out.end(), spec) == out.end()) out.push_back(spec);
  };
  for (const auto& spec : specs) {
    if (spec != "all") {
      add(spec);
      continue;
    }
    for (const PolicyInfo& info : PolicyRegistry::instance().policies()) add(info.name);
  }
  return out;
}

std::vector<TraceReplays> replay_traces(const std::vector<ReplayOptions>& traces,
                                        const std::vector<std::string>& policy_specs, unsigned threads) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = std::min<unsigned>(threads, static_cast<unsigned>(std::max<size_t>(1, traces.size())));
  std::vector<TraceReplays> out(traces.size());
  std::vector<std::exception_ptr> errors(traces.size());
  std::atomic<size_t> next{0};
  const auto work = [&] {
    for (size_t i; (i = next++) < traces.size();) try {
        out[i] = replay_policies(traces[i], policy_specs);
      } catch (...) {
        errors[i] = std::current_exception();
      }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
  return out;
}

}  // namespace memreplay::results
