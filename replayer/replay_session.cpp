#include "replayer/replay_session.h"

#include <algorithm>

#include "proto/input_error.h"
#include "replayer/fragmentation.h"
#include "replayer/hex.h"

namespace memreplay {

ReplaySession::ReplaySession(Policy& policy, Device& device, ReplayOptions options)
    : policy_(policy),
      device_(device),
      device_counters_(device.counters()),
      options_(std::move(options)),
      timeline_(options_.timeline_points) {
  metrics_.trace_device = options_.trace_device;
  metrics_.capacity = device_.capacity();
  metrics_.device_memory = device_.total_memory();
}

void ReplaySession::inconsistent(uint64_t trace_index, const std::string& what) {
  if (!options_.lenient)
    throw InputError::at_event(options_.trace_path, trace_index, what + " (use --lenient to skip such events)");
  if (metrics_.skipped_events++ == 0) metrics_.first_skipped = "event " + std::to_string(trace_index) + ": " + what;
}

std::string ReplaySession::contract_fault(const std::string& what) const {
  // A plugin's faults name their policy already.
  if (what.starts_with("plugin policy '")) return what;
  return (options_.policy_spec.empty() ? std::string("the policy") : "policy '" + options_.policy_spec + "'") +
         " broke its contract: " + what;
}

bool ReplaySession::feed(const Event& event, uint64_t trace_index) { return feed_events({&event, 1}, trace_index); }

bool ReplaySession::feed_batch(std::span<const Event> events, uint64_t first_trace_index) {
  const auto start = std::chrono::steady_clock::now();
  const bool running = feed_events(events, first_trace_index);
  elapsed_ += std::chrono::steady_clock::now() - start;
  return running;
}

bool ReplaySession::feed_events(std::span<const Event> events, uint64_t first_trace_index) {
  size_t i = 0;
  // A policy that breaks its contract (a free it refuses, a plugin's overlapping or too-small
  // block, policies/plugin/) stops the replay at that event, lenient or not: its numbers would be
  // wrong. --lenient is for the trace's inconsistencies only.
  const PluginEventScope plugin_event(options_.trace_path, event_cursor_);
  try {
    for (; i < events.size() && !stopped_; ++i) {
      if (events[i].device != options_.trace_device) continue;
      event_cursor_ = first_trace_index + i;
      dispatch(events[i], first_trace_index + i);
    }
  } catch (const PolicyContractError& e) {
    throw InputError::at_event(options_.trace_path, first_trace_index + i, contract_fault(e.what()));
  }
  return !stopped_;
}

void ReplaySession::dispatch(const Event& event, uint64_t trace_index) {
  if (event.flags & kFailed) [[unlikely]]
    return;  // a device call that failed (interposed traces): nothing changed
  // Nearly every event is an alloc or a free: two predictable branches before the jump table.
  if (event.kind == EventKind::alloc && !event.has_flag(kPreexisting)) [[likely]]
    return on_alloc(event, trace_index);
  if (event.kind == EventKind::free_completed) [[likely]]
    return on_free(event, trace_index);
  switch (event.kind) {
    case EventKind::alloc:  // a block live when the trace began
      if (!options_.from_empty_pool)
        on_preexisting_alloc(event, trace_index);
      else if (event.size != 0)
        unreplayed_blocks_.insert(event.address);  // not this run's allocation: left out, with its free
      break;
    case EventKind::segment_alloc:
    case EventKind::segment_map:
      if (options_.from_empty_pool && event.has_flag(kPreexisting)) {
        // Left out of the replay, but the run's own blocks may lie in it (cached memory the run
        // reused): the pool check still knows it.
        if (options_.check_pools) pools_.on_segment(event);
        break;
      }
      [[fallthrough]];
    case EventKind::segment_free:
    case EventKind::segment_unmap: on_segment(event, trace_index); break;
    case EventKind::empty_cache:
      policy_.empty_cache();
      after_change(event.time_ns, trace_index);
      break;
    case EventKind::event_record:
    case EventKind::stream_wait_event:
      policy_.on_stream_event(event.stream, event.aux, event.kind == EventKind::stream_wait_event);
      break;
    default: break;
  }
}

void ReplaySession::on_alloc(const Event& event, uint64_t trace_index) {
  const uint64_t index = replay_index_++;
  ++metrics_.events;
  if (event.size == 0) {  // never reaches a real allocator (null pointer)
    if (live_.contains(event.address))
      inconsistent(trace_index, "alloc at " + hex_address(event.address) + " while a block there is still live");
    return;
  }
  if (options_.check_pools) [[unlikely]]
    if (auto problem = pools_.on_alloc(event)) return inconsistent(trace_index, *problem);
  // One probe: the slot is claimed now and filled (or given back) once the policy answered.
  const auto [slot, inserted] = live_.try_emplace(event.address);
  if (!inserted) {
    inconsistent(trace_index, "alloc at " + hex_address(event.address) + " while a block there is still live");
    return;
  }
  std::optional<Block> block;
  try {
    block = timed_allocate(event.size, event.stream, event.pool,
                           event.pool == kDefaultPool ? Capture::not_capturing : capture_of(event));
  } catch (...) {
    live_.take(event.address);
    throw;
  }
  if (!block) {
    live_.take(event.address);
    return record_oom(event, index, trace_index);
  }
  *slot = LiveBlock{block->address, block->size, event.size};
  count_live(*block, event.size);
  after_change(event.time_ns, trace_index);
}

void ReplaySession::on_free(const Event& event, uint64_t trace_index) {
  ++replay_index_;
  ++metrics_.events;
  const std::optional<LiveBlock> taken = live_.take(event.address);
  if (!taken) {
    if (unreplayed_blocks_.erase(event.address) != 0) return;  // its alloc OOMed, or it was left out
    inconsistent(trace_index, "free_completed of " + hex_address(event.address) + ", which is not a live block");
    return;
  }
  if (options_.check_pools) [[unlikely]] {
    if (auto problem = pools_.on_free(event)) {
      live_.insert(event.address, *taken);  // skipped (--lenient): the block stays live
      return inconsistent(trace_index, *problem);
    }
  }
  const LiveBlock block = *taken;
  allocated_ -= block.size;
  requested_ -= block.requested;
  timed_free(block.policy_address, event.stream);
  after_change(event.time_ns, trace_index);
}

uint64_t ReplaySession::device_calls() const {
  const auto& c = device_counters_;
  return c.malloc_calls + c.free_calls + c.map_calls + c.unmap_calls + c.reserve_calls + c.release_calls +
         c.pool_grow_calls + c.pool_trim_calls + c.failed_calls;
}

Capture ReplaySession::capture_of(const Event& event) const {
  if (event.has_flag(kCaptured)) return Capture::capturing;
  if (options_.captures_flagged) return Capture::not_capturing;
  const auto& graphs = options_.capture_pools;
  return std::find(graphs.begin(), graphs.end(), event.pool) != graphs.end() ? Capture::capturing : Capture::unknown;
}

std::optional<Block> ReplaySession::allocate_measuring_latency(uint64_t bytes, StreamId stream, PoolId pool,
                                                               Capture capture) {
  const uint64_t calls_before = device_calls();
  const auto start = std::chrono::steady_clock::now();
  auto block = policy_.allocate_in_pool(bytes, stream, pool, capture);
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start);
  (device_calls() == calls_before ? allocate_cached_ : allocate_device_).record(static_cast<uint64_t>(ns.count()));
  return block;
}

void ReplaySession::free_measuring_latency(uint64_t address, StreamId stream) {
  const uint64_t calls_before = device_calls();
  const auto start = std::chrono::steady_clock::now();
  policy_.free(address, stream);
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start);
  (device_calls() == calls_before ? free_cached_ : free_device_).record(static_cast<uint64_t>(ns.count()));
}

// Recorded segment events are outcomes of the recorded allocator, not replayed, except the
// starting state's segments and the release of a private pool.
void ReplaySession::on_segment(const Event& event, uint64_t trace_index) {
  if (options_.check_pools) pools_.on_segment(event);
  // The trace's own record of the driver's calls, for a device that places by it (SimDevice).
  if (event.kind == EventKind::segment_alloc) device_.recorded_malloc(event.address, event.size);
  if (event.kind == EventKind::segment_free) device_.recorded_free(event.address);
  const bool created = event.kind == EventKind::segment_alloc || event.kind == EventKind::segment_map;
  if (created) {
    if (event.has_flag(kPreexisting)) on_preexisting_segment(event, trace_index);
  } else if (event.pool != kDefaultPool) [[unlikely]] {
    // A private pool's segment goes back only once the pool is released: so is it now.
    policy_.release_pool(event.pool);
    after_change(event.time_ns, trace_index);
  }
}

void ReplaySession::on_preexisting_segment(const Event& event, uint64_t trace_index) {
  if (event.size == 0 || event.size > Policy::kMaxRequestBytes)
    return inconsistent(trace_index, "a segment of " + std::to_string(event.size) +
                                         " bytes the trace starts with (needs 0 < bytes <= 2^48)");
  const std::optional<uint64_t> policy_address = policy_.adopt_segment_in_pool(event.size, event.stream, event.pool);
  ++metrics_.preexisting_segments;
  if (policy_address) adopted_segments_[event.address] = {event.size, *policy_address};
  // No metrics until the starting state is whole: its blocks are adopted next.
}

void ReplaySession::on_preexisting_alloc(const Event& event, uint64_t trace_index) {
  if (event.size == 0) return;  // nothing to adopt (a null pointer), as for a plain alloc
  const uint64_t block_size = event.aux != 0 ? event.aux : event.size;
  if (event.size > block_size || block_size > Policy::kMaxRequestBytes)
    return inconsistent(trace_index, "a block of " + std::to_string(block_size) + " bytes for a request of " +
                                         std::to_string(event.size) +
                                         " the trace starts with (needs 0 < requested <= size <= 2^48)");
  std::optional<Block> block;
  // The adopted segment that holds this block, if the policy has segments.
  auto segment = adopted_segments_.upper_bound(event.address);
  if (segment != adopted_segments_.begin()) {
    --segment;
    const auto [segment_size, policy_base] = segment->second;
    if (event.address < segment->first + segment_size)
      block = policy_.adopt_block(policy_base + (event.address - segment->first), block_size, event.size, event.stream);
  }
  if (!block) block = policy_.allocate_in_pool(event.size, event.stream, event.pool, capture_of(event));
  // The starting state does not fit under the capacity (as `fit` probes it) or under the policy's
  // own limit (rmm_pool's maximum_pool_size): an OOM, as any allocation the policy cannot serve,
  // not bad input.
  if (!block) return record_oom(event, replay_index_, trace_index);
  add_live(event.address, *block, event.size);
  // No metrics until the starting state is whole (after_change at the first recorded event).
}

void ReplaySession::record_oom(const Event& event, uint64_t index, uint64_t trace_index) {
  ++metrics_.ooms;
  if (!metrics_.oom_at_event) {
    metrics_.oom_at_event = index;
    metrics_.oom_trace_event = trace_index;
    metrics_.oom_request_bytes = event.size;
    metrics_.oom_stack = event.stack;
  }
  unreplayed_blocks_.insert(event.address);
  if (!options_.continue_after_oom) stopped_ = true;
}

void ReplaySession::add_live(uint64_t trace_address, const Block& block, uint64_t requested) {
  if (const auto [slot, made] = live_.try_emplace(trace_address); made)
    *slot = LiveBlock{block.address, block.size, requested};
  count_live(block, requested);
}

void ReplaySession::count_live(const Block& block, uint64_t requested) {
  allocated_ += block.size;
  requested_ += requested;
  metrics_.allocated_peak = std::max(metrics_.allocated_peak, allocated_);
  metrics_.requested_peak = std::max(metrics_.requested_peak, requested_);
}

void ReplaySession::at_reserved_peak(uint64_t reserved, uint64_t trace_index) {
  if (reserved > metrics_.reserved_peak || !metrics_.peak_trace_event) {  // a new peak
    least_allocated_at_peak_ = allocated_;
    return measure_peak_moment(reserved, trace_index);
  }
  if (allocated_ > allocated_at_peak_moment_) return measure_peak_moment(reserved, trace_index);
  least_allocated_at_peak_ = allocated_;
  metrics_.fragmentation_at_peak_max = reserved == 0 ? 0.0 : 1.0 - double(allocated_) / double(reserved);
}

// The moment at the peak so far: measure fragmentation now, from outside the policy.
void ReplaySession::measure_peak_moment(uint64_t reserved, uint64_t trace_index) {
  metrics_.reserved_peak = reserved;
  metrics_.peak_replay_event = replay_index_ == 0 ? 0 : replay_index_ - 1;
  metrics_.peak_trace_event = trace_index;
  allocated_at_peak_moment_ = allocated_;
  metrics_.fragmentation_at_peak = reserved == 0 ? 0.0 : 1.0 - double(allocated_) / double(reserved);
  metrics_.fragmentation_at_peak_max = reserved == 0 ? 0.0 : 1.0 - double(least_allocated_at_peak_) / double(reserved);
  std::vector<std::pair<uint64_t, uint64_t>> blocks;
  blocks.reserve(live_.size());
  live_.for_each([&](uint64_t, const LiveBlock& b) { blocks.emplace_back(b.policy_address, b.size); });
  const FreeSpace free_space = measure_free_space(device_.backed_ranges(), blocks);
  metrics_.total_free_at_peak = free_space.total_free;
  metrics_.largest_free_at_peak = free_space.largest_free;
  metrics_.free_fragmentation_at_peak =
      free_space.total_free == 0 ? 0.0 : 1.0 - double(free_space.largest_free) / double(free_space.total_free);
}

ReplayMetrics ReplaySession::finish() {
  const auto& c = device_.counters();
  metrics_.reserved_peak = std::max(metrics_.reserved_peak, c.reserved_peak);
  metrics_.device_alloc_calls = c.malloc_calls + c.map_calls;
  metrics_.device_free_calls = c.free_calls + c.unmap_calls;
  metrics_.device_calls = device_calls_of(c);
  metrics_.stopped_at_oom = stopped_;
  metrics_.device_counters = {
      {"malloc", c.malloc_calls},
      {"free", c.free_calls},
      {"reserve", c.reserve_calls},
      {"release", c.release_calls},
      {"map", c.map_calls},
      {"unmap", c.unmap_calls},
      {"failed", c.failed_calls},
      {"reserved_bytes_at_end", c.reserved_bytes},
      {"pool_malloc", c.pool_malloc_calls},
      {"pool_free", c.pool_free_calls},
      {"pool_grow", c.pool_grow_calls},
      {"pool_trim", c.pool_trim_calls},
      {"pool_reserved_peak", c.pool_reserved_peak},
      {"pool_used_peak", c.pool_used_peak},
  };
  const PolicyStats stats = policy_.stats();
  metrics_.alloc_retries = stats.alloc_retries;
  metrics_.policy_stats = stats_by_name(stats, c);
  metrics_.replay_seconds = std::chrono::duration<double>(elapsed_).count();
  metrics_.device_call_seconds = static_cast<double>(c.device_call_ns) / 1e9;
  if (options_.time_operations)
    metrics_.latency = OperationLatencies{allocate_cached_.summary(), allocate_device_.summary(),
                                          free_cached_.summary(), free_device_.summary()};
  metrics_.timeline = timeline_.points();
  return metrics_;
}

}  // namespace memreplay
