#include "replayer/replay_runner.h"

#include <algorithm>
#include <memory>
#include <unordered_map>
#include <vector>

#include "base/units.h"
#include "policies/registry.h"
#include "policies/torch_version.h"
#include "proto/input_error.h"
#include "proto/trace_reader.h"
#include "replayer/device_registry.h"
#include "replayer/pool_consistency.h"
#include "replayer/replay_session.h"

namespace memreplay {

ReplayTarget make_replay_target(const TraceReader& reader, const ReplayOptions& options) {
  DeviceRequest device_request;
  device_request.capacity = options.capacity;
  device_request.follow_recorded_placement = options.follow_recorded_placement;
  for (const auto& d : reader.header().devices())
    if (d.index() == options.trace_device) device_request.total_memory = d.total_memory();
  ReplayTarget target;
  target.device = DeviceRegistry::instance().create(options.device_spec, device_request);
  try {
    target.policy = PolicyRegistry::instance().create(options.policy_spec, *target.device);
  } catch (const PolicySpecError& e) {
    throw InputError("--policy " + options.policy_spec + ": " + e.what());
  } catch (const PolicyContractError& e) {  // a plugin's fault while it was being created
    throw InputError("--policy " + options.policy_spec + ": " + e.what());
  }
  return target;
}

void refuse_eventless_trace(const TraceReader& reader, bool read_any_event) {
  if (read_any_event) return;
  if (const auto note = reader.truncation_note())
    throw InputError(reader.path() + ": no event to read: the file was cut off before its first whole chunk (" + *note +
                     ")");
  throw InputError(reader.path() +
                   ": the trace holds no event (a recording of a program that made no GPU allocation?)");
}

void read_trace_header(const proto::TraceHeader& header, ReplayOptions& options) {
  options.check_pools = options.check_pools || may_have_private_pools(header);
  options.captures_flagged = header.captures_flagged();
  options.capture_pools.clear();
  for (const auto& pool : header.pools())
    if (pool.kind() == "graph") options.capture_pools.push_back(static_cast<uint16_t>(pool.id()));
}

ReplayMetrics run_replay(const ReplayOptions& options) {
  TraceReader reader(options.trace_path);
  auto [device, policy] = make_replay_target(reader, options);

  ReplayOptions session_options = options;
  read_trace_header(reader.header(), session_options);
  ReplaySession session(*policy, *device, session_options);
  std::vector<Event> batch;
  uint64_t index = 0;
  bool read_any_event = false;
  while (reader.next_batch(batch)) {
    read_any_event = true;
    if (!session.feed_batch(batch, index)) break;
    index += batch.size();
    if (device->left_recorded_placement()) break;  // replayed again below, by one rule throughout
  }
  refuse_eventless_trace(reader, read_any_event);
  if (device->left_recorded_placement()) {
    ReplayOptions by_model = options;
    by_model.follow_recorded_placement = false;
    return run_replay(by_model);
  }
  ReplayMetrics metrics = session.finish();
  metrics.recorded_placement = options.follow_recorded_placement;
  metrics.policy = options.policy_spec;
  metrics.device = options.device_spec;
  note_trace_loss(reader, metrics);
  return metrics;
}

void note_trace_loss(TraceReader& reader, ReplayMetrics& metrics) {
  if (auto loss = reader.loss()) {
    metrics.trace_complete = false;
    metrics.loss = TraceLoss{loss->whole_events, loss->lost_bytes, loss->file_bytes, std::move(loss->reason)};
  }
}

std::optional<std::string> torch_version_warning(const std::string& trace, const proto::TraceHeader& header,
                                                 const std::string& policy_spec) {
  const auto& settings = header.allocator_settings();
  const auto recorded = settings.find(std::string(kTorchVersionSetting));
  if (recorded == settings.end()) return std::nullopt;
  const auto message = torch_version_mismatch(recorded->second, policy_spec);
  if (!message) return std::nullopt;
  return trace + ": " + *message;
}

std::optional<std::string> torch_version_warning(const std::string& trace, const std::string& policy_spec) {
  std::optional<TraceReader> reader;
  try {
    reader.emplace(trace);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  return torch_version_warning(trace, reader->header(), policy_spec);
}

std::optional<uint64_t> recorded_capacity(const proto::TraceHeader& header, uint32_t trace_device) {
  for (const auto& d : header.devices())
    if (d.index() == trace_device && d.cap_bytes() != 0) return d.cap_bytes();
  return std::nullopt;
}

std::optional<std::string> use_recorded_capacity(ReplayOptions& options) {
  if (options.capacity) return std::nullopt;
  std::optional<TraceReader> reader;
  try {
    reader.emplace(options.trace_path);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  const std::optional<uint64_t> cap = recorded_capacity(reader->header(), options.trace_device);
  if (!cap) return std::nullopt;
  options.capacity = cap;
  return options.trace_path + ": replayed under the per-process cap the run recorded on device " +
         std::to_string(options.trace_device) + ", " + format_bytes(*cap) + " (" + std::to_string(*cap) +
         " B); --capacity overrides it";
}

std::optional<std::string> capture_warning(const std::string& trace, const proto::TraceHeader& header,
                                           const std::string& policy_spec) {
  const std::string name(detail::split_spec(policy_spec).first);
  const PolicyInfo* info = PolicyRegistry::instance().find(name);
  if (info == nullptr || !info->decides_by_capture || header.captures_flagged()) return std::nullopt;
  // A capture's own pool (kind "graph") is always a capture; a live recording announces its pools
  // as it goes, so any of them may be a MemPool's.
  bool ambiguous = header.source() == "pytorch-live";
  for (const auto& pool : header.pools()) ambiguous |= pool.kind() != "graph";
  if (!ambiguous) return std::nullopt;
  return trace +
         ": the trace does not say which allocations in its MemPool-like pools (kind mempool) were made "
         "under a CUDA graph capture (a snapshot, or a recorder older than format 1.3); '" +
         name + "' reads them as captured, as 2.11 decides; a memreplay.torch recording says";
}

std::vector<std::string> replay_warnings_before(const ReplayOptions& options) {
  std::vector<std::string> warnings;
  // What the header says, read once; the replay itself reports an unreadable trace.
  std::optional<TraceReader> reader;
  try {
    reader.emplace(options.trace_path);
  } catch (const std::exception&) {}
  if (reader) {
    for (auto warning : {torch_version_warning(options.trace_path, reader->header(), options.policy_spec),
                         capture_warning(options.trace_path, reader->header(), options.policy_spec)})
      if (warning) warnings.push_back(std::move(*warning));
  }
  const std::string& spec = options.policy_spec;
  const bool fraction = spec.find("per_process_memory_fraction") != std::string::npos;
  if (spec.find("garbage_collection_threshold") != std::string::npos && !options.capacity && !fraction)
    warnings.push_back(spec +
                       ": garbage_collection_threshold acts only under a per-process limit; without --capacity (or "
                       "per_process_memory_fraction) it changes nothing");
  if (fraction && options.capacity)
    warnings.push_back(spec +
                       ": per_process_memory_fraction is ignored when --capacity is given (the capacity is the limit)");
  return warnings;
}

std::vector<std::string> replay_warnings_after(const ReplayOptions& options, const ReplayMetrics& m) {
  std::vector<std::string> warnings;
  if (m.events == 0 && !m.oom_at_event)  // (an OOM in the starting state stops before any event)
    warnings.push_back(options.trace_path + ": no alloc or free events on trace device " +
                       std::to_string(options.trace_device) +
                       " (see `memreplay info` for the devices it has); every number below is 0");
  if (auto skipped = skipped_warning(options.trace_path, m)) warnings.push_back(std::move(*skipped));
  return warnings;
}

void refuse_incomplete_trace(const std::string& trace, bool allowed, const std::string& consequence) {
  if (allowed) return;
  TraceReader reader(trace);
  if (!reader.complete())
    throw InputError(trace + ": the trace is incomplete (" + reader.truncation_note().value_or("no footer") + "); " +
                     consequence);
}

ReplayMetrics run_uncapped_replay(const ReplayOptions& options) {
  ReplayOptions uncapped = options;
  uncapped.capacity.reset();
  uncapped.continue_after_oom = false;
  ReplayMetrics m = run_replay(uncapped);
  if (m.oom_at_event) throw InputError(options.trace_path + ": the replay runs out of memory even without a cap");
  return m;
}

uint64_t recorded_malloc_peak(const ReplayOptions& options) {
  TraceReader reader(options.trace_path);
  std::unordered_map<uint64_t, uint64_t> live;  // segment address -> bytes
  uint64_t held = 0, peak = 0;
  std::vector<Event> batch;
  while (reader.next_batch(batch))
    for (const Event& e : batch) {
      if (e.device != options.trace_device || e.has_flag(kFailed)) continue;
      if (e.kind == EventKind::segment_alloc) {
        if (live.try_emplace(e.address, e.size).second) held += e.size;
        peak = std::max(peak, held);
      } else if (e.kind == EventKind::segment_free) {
        if (const auto it = live.find(e.address); it != live.end()) {
          held -= it->second;
          live.erase(it);
        }
      }
    }
  return peak;
}

bool fits_at(const ReplayOptions& options, uint64_t capacity, uint64_t recorded_peak) {
  ReplayOptions probe = options;
  probe.continue_after_oom = false;
  probe.capacity = capacity;
  if (capacity < recorded_peak) probe.follow_recorded_placement = false;
  return !run_replay(probe).oom_at_event;
}

FitResult find_min_capacity(const ReplayOptions& options, uint64_t resolution_bytes) {
  if (resolution_bytes == 0) resolution_bytes = 1;
  FitResult result;
  result.uncapped = run_uncapped_replay(options);
  ++result.replays;
  const uint64_t recorded_peak = recorded_malloc_peak(options);

  uint64_t fits = result.uncapped.reserved_peak;
  uint64_t fails = result.uncapped.requested_peak == 0 ? 0 : result.uncapped.requested_peak - 1;
  while (fits - fails > resolution_bytes) {
    const uint64_t middle = fails + (fits - fails) / 2;
    ++result.replays;
    (fits_at(options, middle, recorded_peak) ? fits : fails) = middle;
  }
  result.min_fit_bytes = fits;
  result.max_fail_bytes = fails;
  result.resolution_bytes = fits - fails;
  return result;
}

}  // namespace memreplay
