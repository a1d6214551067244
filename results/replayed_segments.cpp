#include "results/replayed_segments.h"

#include <algorithm>
#include <iterator>

#include "proto/trace_reader.h"

namespace memreplay::results {
namespace {

ReplayOptions one_point(ReplayOptions options) {
  options.timeline_points = 1;
  return options;
}

}  // namespace

SegmentReplay::SegmentReplay(const TraceReader& reader, const ReplayOptions& options)
    : target_(make_replay_target(reader, options)),
      observer_(*target_.policy, false, false),
      session_(observer_, *target_.device, one_point(options)),
      trace_device_(options.trace_device) {}

void SegmentReplay::record_segment_changes(const Event& cause, std::vector<Event>& out) {
  const DeviceCounters& c = target_.device->counters();
  if (c.reserved_bytes_allocated + c.reserved_bytes_freed == reserved_changes_) return;
  reserved_changes_ = c.reserved_bytes_allocated + c.reserved_bytes_freed;
  auto now = target_.device->backed_ranges();
  std::vector<std::pair<uint64_t, uint64_t>> gone, added;
  std::set_difference(ranges_.begin(), ranges_.end(), now.begin(), now.end(), std::back_inserter(gone));
  std::set_difference(now.begin(), now.end(), ranges_.begin(), ranges_.end(), std::back_inserter(added));
  const auto segment_event = [&](EventKind kind, const std::pair<uint64_t, uint64_t>& range) {
    Event s;
    s.kind = kind;
    s.device = cause.device;
    s.time_ns = cause.time_ns;
    s.stream = cause.stream;
    s.address = range.first;
    s.size = range.second - range.first;
    out.push_back(s);
  };
  for (const auto& r : gone) segment_event(EventKind::segment_free, r);
  for (const auto& r : added) segment_event(EventKind::segment_alloc, r);
  ranges_ = std::move(now);
}

bool SegmentReplay::feed(const Event& e, uint64_t index, std::vector<Event>& out) {
  if (e.device != trace_device_) return true;
  if (!session_.feed(e, index)) return false;
  Event rewritten = e;
  switch (e.kind) {
    case EventKind::alloc: {
      const auto [address, size] = observer_.last_block();
      address_of_[e.address] = address;
      rewritten.address = address;
      rewritten.aux = size;
      record_segment_changes(e, out);  // the segment it needed comes first
      out.push_back(rewritten);
      return true;
    }
    case EventKind::free_requested:
    case EventKind::free_completed:
      if (const auto it = address_of_.find(e.address); it != address_of_.end()) {
        rewritten.address = it->second;
        if (e.kind == EventKind::free_completed) address_of_.erase(it);
      }
      break;
    default: break;
  }
  out.push_back(rewritten);
  record_segment_changes(e, out);  // what a free or empty_cache gave back comes after it
  return true;
}

}  // namespace memreplay::results
