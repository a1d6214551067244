#include "replayer/retry_reading_sink.h"

#include "policies/pytorch/caching_allocator_policy.h"
#include "policies/registry.h"
#include "replayer/device_registry.h"
#include "replayer/replay_session.h"

namespace memreplay {
namespace {

// The snapshot's allocator_settings key that holds PYTORCH_CUDA_ALLOC_CONF as the user wrote it.
constexpr const char* kAllocConfSetting = "PYTORCH_CUDA_ALLOC_CONF";

}  // namespace

// One recorded device's replay under the cap, fed every event of that device as it passes.
struct RetryReadingSink::DeviceReplay {
  std::unique_ptr<Device> device;
  std::unique_ptr<pytorch::CachingAllocatorPolicy> policy;
  std::unique_ptr<ReplaySession> session;
};

RetryReadingSink::RetryReadingSink(TraceSink& inner, uint64_t cap) : inner_(inner), cap_(cap) {}
RetryReadingSink::~RetryReadingSink() = default;

void RetryReadingSink::begin(const proto::TraceHeader& header) {
  proto::TraceHeader capped = header;
  for (proto::DeviceInfo& d : *capped.mutable_devices()) {
    d.set_cap_bytes(cap_);
    if (d.index() >= total_memory_.size()) total_memory_.resize(d.index() + 1, 0);
    total_memory_[d.index()] = d.total_memory();
  }
  trace_name_ = header.source_file();
  const auto& settings = header.allocator_settings();
  const auto conf = settings.find(kAllocConfSetting);
  alloc_conf_ = conf == settings.end() ? std::string() : conf->second;
  try {
    (void)pytorch::parse_alloc_config(*alloc_conf_);
  } catch (const PolicySpecError&) {
    alloc_conf_.reset();  // an allocator the pytorch policy does not model: no verdicts
  }
  inner_.begin(capped);
}

RetryReadingSink::DeviceReplay* RetryReadingSink::replay_of(uint32_t device) {
  if (!alloc_conf_) return nullptr;
  if (device >= devices_.size()) devices_.resize(device + 1);
  std::unique_ptr<DeviceReplay>& slot = devices_[device];
  if (!slot) {
    slot = std::make_unique<DeviceReplay>();
    DeviceRequest request;
    request.capacity = cap_;
    if (device < total_memory_.size()) request.total_memory = total_memory_[device];
    slot->device = DeviceRegistry::instance().create("sim", request);
    slot->policy =
        std::make_unique<pytorch::CachingAllocatorPolicy>(pytorch::parse_alloc_config(*alloc_conf_), *slot->device);
    ReplayOptions options;
    options.trace_path = trace_name_;
    options.trace_device = device;
    options.lenient = true;  // the trace's own inconsistencies are the replay's to report, not the import's
    options.continue_after_oom = false;  // past an OOM under the cap its state says nothing
    options.timeline_points = 2;
    slot->session = std::make_unique<ReplaySession>(*slot->policy, *slot->device, options);
  }
  return slot.get();
}

void RetryReadingSink::append(const Event& event) {
  if (DeviceReplay* replay = replay_of(event.device); replay != nullptr && !replay->session->stopped())
    replay->session->feed(event, events_);
  ++events_;
  inner_.append(event);
}

void RetryReadingSink::append_annotation(const Event& event, const KeyValues& metadata) {
  ++events_;
  inner_.append_annotation(event, metadata);
}

std::optional<uint64_t> RetryReadingSink::out_of_memory_at() const {
  std::optional<uint64_t> first;
  for (const auto& replay : devices_)
    if (replay && replay->session->stopped())
      if (const auto at = replay->session->finish().oom_trace_event; at && (!first || *at < *first)) first = at;
  return first;
}

std::optional<bool> RetryReadingSink::burst_is_retry(const Event& next_alloc) {
  DeviceReplay* replay = replay_of(next_alloc.device);
  if (replay == nullptr || replay->session->stopped()) return std::nullopt;
  const bool retry = next_alloc.pool == kDefaultPool && next_alloc.size != 0 &&
                     !replay->policy->fits_without_release(next_alloc.size, next_alloc.stream);
  ++settled_;
  retries_ += retry;
  return retry;
}

}  // namespace memreplay
