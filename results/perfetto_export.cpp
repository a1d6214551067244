#include "results/perfetto_export.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "base/units.h"
#include "proto/trace_reader.h"
#include "results/replay_batch.h"

namespace memreplay::results {
namespace {

constexpr int kCounterPid = 1, kAllocationPid = 2;

void append(std::string& out, const char* format, auto... args) {
  char buffer[512];
  const int n = std::snprintf(buffer, sizeof buffer, format, args...);
  out.append(buffer, static_cast<size_t>(std::min(n, static_cast<int>(sizeof buffer) - 1)));
}

std::string json_string(const std::string& s) { return nlohmann::json(s).dump(); }

}  // namespace

std::vector<size_t> counter_samples(const std::vector<TimelinePoint>& timeline, size_t buckets) {
  std::vector<size_t> keep;
  if (timeline.empty()) return keep;
  const uint64_t t0 = timeline.front().time_ns, span = timeline.back().time_ns - t0 + 1;
  const uint64_t width = (span + buckets - 1) / std::max<size_t>(buckets, 1);
  const auto bucket_of = [&](const TimelinePoint& p) { return (p.time_ns - t0) / width; };
  keep.push_back(0);
  for (size_t from = 1; from < timeline.size();) {
    const uint64_t bucket = bucket_of(timeline[from]);
    size_t to = from;
    size_t max_allocated = from, min_allocated = from, max_requested = from;
    for (; to < timeline.size() && bucket_of(timeline[to]) == bucket; ++to) {
      const TimelinePoint& p = timeline[to];
      if (p.allocated > timeline[max_allocated].allocated) max_allocated = to;
      if (p.allocated < timeline[min_allocated].allocated) min_allocated = to;
      if (p.requested > timeline[max_requested].requested) max_requested = to;
      if (p.reserved != timeline[to - 1].reserved) keep.push_back(to);  // every device call, exactly
    }
    for (const size_t i : {max_allocated, min_allocated, max_requested, to - 1}) keep.push_back(i);
    from = to;
  }
  std::sort(keep.begin(), keep.end());
  keep.erase(std::unique(keep.begin(), keep.end()), keep.end());
  // A sample that repeats the one before it draws nothing new.
  std::vector<size_t> changed;
  for (const size_t i : keep) {
    const TimelinePoint& p = timeline[i];
    if (!changed.empty()) {
      const TimelinePoint& q = timeline[changed.back()];
      if (q.reserved == p.reserved && q.allocated == p.allocated && q.requested == p.requested) continue;
    }
    changed.push_back(i);
  }
  return changed;
}

namespace {}  // namespace

std::string export_perfetto(const std::string& trace_path, uint32_t trace_device,
                            const std::vector<ReplayMetrics>& replays) {
  std::string out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  append(out, "{\"ph\":\"M\",\"pid\":%d,\"name\":\"process_name\",\"args\":{\"name\":\"memory per policy\"}},\n",
         kCounterPid);
  append(out, "{\"ph\":\"M\",\"pid\":%d,\"name\":\"process_name\",\"args\":{\"name\":\"allocations\"}}",
         kAllocationPid);
  for (const auto& m : replays) {
    const std::string name = json_string("bytes (" + m.policy + ")");
    for (const size_t i : counter_samples(m.timeline)) {
      const TimelinePoint& p = m.timeline[i];
      append(out,
             ",\n{\"ph\":\"C\",\"pid\":%d,\"name\":%s,\"ts\":%.3f,\"args\":{\"reserved\":%" PRIu64
             ",\"allocated\":%" PRIu64 ",\"requested\":%" PRIu64 "}}",
             kCounterPid, name.c_str(), double(p.time_ns) / 1000.0, p.reserved, p.allocated, p.requested);
    }
  }

  TraceReader reader(trace_path);
  std::map<uint64_t, int> stream_tracks;
  std::unordered_map<uint64_t, std::pair<uint64_t, uint64_t>> open;  // address -> (slice id, bytes)
  uint64_t next_id = 1;
  std::vector<Event> batch;
  while (reader.next_batch(batch)) {
    for (const auto& e : batch) {
      if (e.device != trace_device) continue;
      if (e.kind != EventKind::alloc && e.kind != EventKind::free_completed) continue;
      auto [track, added] = stream_tracks.try_emplace(e.stream, static_cast<int>(stream_tracks.size()) + 1);
      if (added)
        append(out,
               ",\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"thread_name\",\"args\":{\"name\":\"stream "
               "0x%" PRIx64 "\"}}",
               kAllocationPid, track->second, e.stream);
      const double ts = double(e.time_ns) / 1000.0;
      if (e.kind == EventKind::alloc) {
        const uint64_t id = next_id++;
        open[e.address] = {id, e.size};
        append(out,
               ",\n{\"ph\":\"b\",\"cat\":\"allocation\",\"id\":%" PRIu64
               ",\"pid\":%d,\"tid\":%d,\"name\":\"%s\","
               "\"ts\":%.3f,\"args\":{\"bytes\":%" PRIu64 ",\"address\":\"0x%" PRIx64 "\"}}",
               id, kAllocationPid, track->second, format_bytes(e.size).c_str(), ts, e.size, e.address);
      } else if (auto it = open.find(e.address); it != open.end()) {
        append(out,
               ",\n{\"ph\":\"e\",\"cat\":\"allocation\",\"id\":%" PRIu64
               ",\"pid\":%d,\"tid\":%d,\"name\":\"%s\","
               "\"ts\":%.3f}",
               it->second.first, kAllocationPid, track->second, format_bytes(it->second.second).c_str(), ts);
        open.erase(it);
      }
    }
  }
  out += "\n]}\n";
  return out;
}

std::vector<std::string> perfetto_export_policies(const std::vector<std::string>& asked) {
  return asked.empty() ? std::vector<std::string>{"pytorch"} : asked;
}

std::string export_perfetto_replays(const std::string& trace_path, uint32_t trace_device,
                                    const std::vector<std::string>& policies) {
  ReplayOptions base;
  base.trace_path = trace_path;
  base.trace_device = trace_device;
  base.timeline_points = size_t{1} << 24;  // every event, up to 16M of them
  return export_perfetto(trace_path, trace_device, replay_policies(base, perfetto_export_policies(policies)).metrics);
}

}  // namespace memreplay::results
