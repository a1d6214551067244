#include "replayer/trace_summary.h"

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>

#include "proto/trace_reader.h"

namespace memreplay {

void TraceSummarizer::add(std::span<const Event> events, uint64_t first_index) {
  for (size_t i = 0; i < events.size(); ++i) add_one(events[i], first_index + i);
}

void TraceSummarizer::add_one(const Event& event, uint64_t index) {
  DeviceState& state = devices_[event.device];
  DeviceSummary& s = state.summary;
  if (!second_pass_) {
    s.device = event.device;
    const auto kind = static_cast<size_t>(event.kind);
    if (event.has_flag(kPreexisting)) {
      if (event.kind == EventKind::segment_alloc || event.kind == EventKind::segment_map) {
        ++s.starting_state.segments;
        s.starting_state.segment_bytes += event.size;
      } else if (event.kind == EventKind::alloc) {
        ++s.starting_state.blocks;
        s.starting_state.block_bytes += event.size;
      }
    } else if (event.has_flag(kInferred)) {
      ++state.inferred_counts[kind];
    } else if (event.has_flag(kFailed)) {
      ++state.failed_counts[kind];
    } else {
      ++state.kind_counts[kind];
    }
    if (!event.has_flag(kFailed)) count_pool(state, event);
    if (event.kind == EventKind::alloc || event.kind == EventKind::free_requested ||
        event.kind == EventKind::free_completed || event.kind == EventKind::segment_alloc)
      s.streams.insert(event.stream);
    if (event.time_ns != 0) {
      if (s.first_time_ns == 0 || event.time_ns < s.first_time_ns) s.first_time_ns = event.time_ns;
      s.last_time_ns = std::max(s.last_time_ns, event.time_ns);
    }
  }
  if (event.has_flag(kFailed)) return;  // the call failed: nothing became live or was freed
  if (event.kind == EventKind::alloc) {
    if (state.live.try_emplace(event.address, Live{event.size, event.stack, event.pool}).second) {
      state.live_bytes += event.size;
      if (!second_pass_) {
        PoolBytes& bytes = state.pool_bytes[event.pool];
        bytes.requested += event.size;
        auto& peak = s.pools[event.pool].peak_requested_bytes;
        peak = std::max(peak, bytes.requested);
      }
    }
  } else if (event.kind == EventKind::free_completed) {
    if (const auto it = state.live.find(event.address); it != state.live.end()) {
      state.live_bytes -= it->second.requested;
      if (!second_pass_) state.pool_bytes[it->second.pool].requested -= it->second.requested;
      state.live.erase(it);
    }
  } else {
    return;
  }
  if (!second_pass_ && state.live_bytes > s.peak_requested_bytes) {
    s.peak_requested_bytes = state.live_bytes;
    s.peak_event = index;
    s.peak_time_ns = event.time_ns;
  }
  if (second_pass_ && index == s.peak_event && !state.captured) {
    state.captured = true;
    for (const auto& [_, live] : state.live) {
      auto& share = state.stacks_at_peak[live.stack];
      share.stack = live.stack;
      share.bytes += live.requested;
      ++share.blocks;
    }
  }
}

// Counts and reserved bytes per pool (first pass). A segment is released from the pool its event
// names, which the pool-consistency check holds to the pool it was allocated in.
void TraceSummarizer::count_pool(DeviceState& state, const Event& event) {
  const bool recorded = !event.has_flag(kPreexisting);
  const bool growth = event.kind == EventKind::segment_alloc || event.kind == EventKind::segment_map;
  if (event.kind == EventKind::alloc) {
    DeviceSummary::Pool& pool = state.summary.pools[event.pool];
    pool.allocs += recorded;
    pool.captured_allocs += recorded && event.has_flag(kCaptured);
    state.summary.has_allocations = true;
  } else if (growth) {
    DeviceSummary::Pool& pool = state.summary.pools[event.pool];
    pool.segments += recorded;
    uint64_t& reserved = state.pool_bytes[event.pool].reserved;
    reserved += event.size;
    pool.peak_reserved_bytes = std::max(pool.peak_reserved_bytes, reserved);
    state.reserved_bytes += event.size;
    state.summary.peak_reserved_bytes = std::max(state.summary.peak_reserved_bytes, state.reserved_bytes);
    state.summary.has_segment_events = true;
  } else if (event.kind == EventKind::segment_free || event.kind == EventKind::segment_unmap) {
    uint64_t& reserved = state.pool_bytes[event.pool].reserved;
    state.reserved_bytes -= std::min(state.reserved_bytes, std::min(reserved, event.size));
    reserved -= std::min(reserved, event.size);
  }
}

void TraceSummarizer::start_second_pass() {
  second_pass_ = true;
  for (auto& [_, state] : devices_) {
    state.live.clear();
    state.live_bytes = 0;
  }
}

std::optional<PoolName> pool_announced(const KeyValues& annotation) {
  PoolName pool;
  bool has_id = false;
  for (const auto& [key, value] : annotation) {
    if (key == "pool") {
      has_id = std::from_chars(value.data(), value.data() + value.size(), pool.id).ec == std::errc();
    } else if (key == "kind") {
      pool.kind = value;
    } else if (key == "torch_pool_id") {
      const size_t comma = value.find(',');
      if (comma == std::string::npos) continue;
      std::from_chars(value.data(), value.data() + comma, pool.torch_id_first);
      std::from_chars(value.data() + comma + 1, value.data() + value.size(), pool.torch_id_second);
    }
  }
  if (!has_id || pool.id == 0) return std::nullopt;
  return pool;
}

TraceSummary summarize_trace(TraceReader& reader, size_t top_stacks) {
  TraceSummary result;
  std::map<uint32_t, PoolName> pools;
  for (const auto& p : reader.header().pools())
    pools[p.id()] = {p.id(), p.kind(), p.torch_id_first(), p.torch_id_second(), p.name()};
  TraceSummarizer summarizer(top_stacks);
  std::vector<Event> batch;
  for (int pass = 0; pass < 2; ++pass) {
    if (pass == 1) {
      reader.rewind();
      summarizer.start_second_pass();
    }
    uint64_t index = 0;
    while (reader.next_batch(batch)) {
      if (pass == 0)
        for (const Event& e : batch)
          if (e.kind == EventKind::annotation)
            if (auto pool = pool_announced(reader.annotation(e))) pools.try_emplace(pool->id, std::move(*pool));
      summarizer.add(batch, index);
      index += batch.size();
    }
  }
  for (auto& [_, pool] : pools) result.pools.push_back(std::move(pool));
  result.devices = summarizer.finish();
  return result;
}

std::vector<DeviceSummary> TraceSummarizer::finish() {
  std::vector<DeviceSummary> result;
  for (auto& [_, state] : devices_) {
    std::vector<StackShare> shares;
    for (const auto& [_, share] : state.stacks_at_peak) shares.push_back(share);
    std::sort(shares.begin(), shares.end(), [](const StackShare& a, const StackShare& b) { return a.bytes > b.bytes; });
    if (shares.size() > top_stacks_) shares.resize(top_stacks_);
    state.summary.top_stacks_at_peak = std::move(shares);
    for (int kind = 1; kind < kEventKindCount; ++kind) {
      const std::string name(event_kind_name(static_cast<EventKind>(kind)));
      if (state.kind_counts[kind] != 0) state.summary.events_per_kind[name] = state.kind_counts[kind];
      if (state.inferred_counts[kind] != 0) state.summary.inferred_per_kind[name] = state.inferred_counts[kind];
      if (state.failed_counts[kind] != 0) state.summary.failed_per_kind[name] = state.failed_counts[kind];
    }
    result.push_back(std::move(state.summary));
  }
  return result;
}

namespace {

nlohmann::json stack_json(TraceReader& reader, uint32_t stack) {
  nlohmann::json frames = nlohmann::json::array();
  if (stack != 0)
    for (const auto& f : reader.stack_frames(stack))
      frames.push_back({{"filename", f.filename}, {"line", f.line}, {"name", f.name}});
  return frames;
}

}  // namespace

nlohmann::json trace_summary_json(TraceReader& reader, const std::string& path) {
  const TraceSummary summary = summarize_trace(reader);
  const auto& h = reader.header();
  nlohmann::json devices = nlohmann::json::array();
  for (const auto& d : summary.devices) {
    nlohmann::json top = nlohmann::json::array();
    for (const auto& s : d.top_stacks_at_peak)
      top.push_back({{"bytes", s.bytes}, {"blocks", s.blocks}, {"stack", stack_json(reader, s.stack)}});
    std::string name;
    uint64_t total = 0, cap = 0, unknown_segments = 0, unknown_allocations = 0;
    for (const auto& info : h.devices())
      if (info.index() == d.device) {
        name = info.name(), total = info.total_memory(), cap = info.cap_bytes();
        unknown_segments = info.segments_of_unknown_pool(), unknown_allocations = info.allocations_of_unknown_pool();
      }
    const auto& start = d.starting_state;
    nlohmann::json pools = nlohmann::json::object();
    if (!summary.pools.empty() || d.pools.size() > 1)
      for (const auto& [pool, p] : d.pools)
        pools[std::to_string(pool)] = {
            {"allocs", p.allocs},
            // How many were made under a CUDA graph capture, where the trace says (captures_flagged).
            {"captured_allocs", h.captures_flagged() ? nlohmann::json(p.captured_allocs) : nlohmann::json(nullptr)},
            {"segments", p.segments},
            {"peak_reserved_bytes", p.peak_reserved_bytes},
            {"peak_requested_bytes", p.peak_requested_bytes}};
    devices.push_back({{"device", d.device},
                       {"name", name},
                       {"total_memory", total},
                       {"cap_bytes", cap == 0 ? nlohmann::json(nullptr) : nlohmann::json(cap)},
                       {"events_per_kind", d.events_per_kind},
                       {"starting_state",
                        {{"segments", start.segments},
                         {"segment_bytes", start.segment_bytes},
                         {"blocks", start.blocks},
                         {"block_bytes", start.block_bytes}}},
                       {"inferred_per_kind", d.inferred_per_kind},
                       {"failed_per_kind", d.failed_per_kind},
                       {"pools", pools},
                       {"pool_unknown", {{"segments", unknown_segments}, {"allocations", unknown_allocations}}},
                       {"streams", d.streams},
                       {"duration_ns", d.last_time_ns - d.first_time_ns},
                       {"peak_requested_bytes", d.peak_requested_bytes},
                       {"peak_reserved_bytes",
                        d.has_segment_events ? nlohmann::json(d.peak_reserved_bytes) : nlohmann::json(nullptr)},
                       {"allocations_visible", d.allocations_visible()},
                       {"peak_event", d.peak_event},
                       {"peak_time_ns", d.peak_time_ns},
                       {"top_stacks_at_peak", top}});
  }
  std::map<std::string, std::string> settings(h.allocator_settings().begin(), h.allocator_settings().end());
  nlohmann::json pools = nlohmann::json::array();
  for (const auto& p : summary.pools)  // the header's, or a live trace's announced ones
    pools.push_back(
        {{"id", p.id}, {"kind", p.kind}, {"torch_id", {p.torch_id_first, p.torch_id_second}}, {"name", p.name}});
  return {{"trace", path},
          {"format_version", std::to_string(h.format_major()) + "." + std::to_string(h.format_minor())},
          {"source", h.source()},
          {"source_file", h.source_file()},
          {"capture_time_ns", h.capture_time_ns()},
          {"command_line", h.command_line()},
          {"pid", h.pid()},
          {"starts_mid_run", h.starts_mid_run()},
          {"captures_flagged", h.captures_flagged()},
          {"complete", reader.complete()},
          {"allocator_settings", settings},
          {"pools", pools},
          {"devices", devices}};
}

}  // namespace memreplay
