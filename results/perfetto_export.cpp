#include "results/perfetto_export.h"

#include <cinttypes>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "proto/trace_reader.h"
#include "results/units.h"

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

std::string export_perfetto(const std::string& trace_path, uint32_t trace_device,
                            const std::vector<ReplayMetrics>& replays) {
  std::string out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  append(out, "{\"ph\":\"M\",\"pid\":%d,\"name\":\"process_name\",\"args\":{\"name\":\"memory per policy\"}},\n",
         kCounterPid);
  append(out, "{\"ph\":\"M\",\"pid\":%d,\"name\":\"process_name\",\"args\":{\"name\":\"allocations\"}}", kAllocationPid);
  for (const auto& m : replays) {
    const std::string name = json_string("bytes (" + m.policy + ")");
    const TimelinePoint* last = nullptr;
    for (const auto& p : m.timeline) {
      if (last && last->reserved == p.reserved && last->allocated == p.allocated && last->requested == p.requested)
        continue;
      append(out,
             ",\n{\"ph\":\"C\",\"pid\":%d,\"name\":%s,\"ts\":%.3f,\"args\":{\"reserved\":%" PRIu64
             ",\"allocated\":%" PRIu64 ",\"requested\":%" PRIu64 "}}",
             kCounterPid, name.c_str(), double(p.time_ns) / 1000.0, p.reserved, p.allocated, p.requested);
      last = &p;
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
               ",\n{\"ph\":\"b\",\"cat\":\"allocation\",\"id\":%" PRIu64 ",\"pid\":%d,\"tid\":%d,\"name\":\"%s\","
               "\"ts\":%.3f,\"args\":{\"bytes\":%" PRIu64 ",\"address\":\"0x%" PRIx64 "\"}}",
               id, kAllocationPid, track->second, format_bytes(e.size).c_str(), ts, e.size, e.address);
      } else if (auto it = open.find(e.address); it != open.end()) {
        append(out,
               ",\n{\"ph\":\"e\",\"cat\":\"allocation\",\"id\":%" PRIu64 ",\"pid\":%d,\"tid\":%d,\"name\":\"%s\","
               "\"ts\":%.3f}",
               it->second.first, kAllocationPid, track->second, format_bytes(it->second.second).c_str(), ts);
        open.erase(it);
      }
    }
  }
  out += "\n]}\n";
  return out;
}

}  // namespace memreplay::results
