#include "tools/bench/scaled_trace.h"

#include <unordered_map>
#include <vector>

#include "proto/trace_reader.h"
#include "proto/trace_writer.h"

namespace memreplay::bench {
namespace {

// Which of an event's fields are byte counts: every size but a stream or event handle's.
bool size_is_bytes(EventKind kind) {
  switch (kind) {
    case EventKind::alloc:
    case EventKind::free_requested:
    case EventKind::free_completed:
    case EventKind::segment_alloc:
    case EventKind::segment_free:
    case EventKind::segment_map:
    case EventKind::segment_unmap:
    case EventKind::snapshot:
    case EventKind::oom:
    case EventKind::address_reserve:
    case EventKind::address_free:
    case EventKind::physical_alloc:
    case EventKind::physical_free: return true;
    default: return false;
  }
}

// aux holds bytes for a preexisting alloc (its rounded size) and an OOM (the device's free bytes).
bool aux_is_bytes(const Event& e) {
  return e.kind == EventKind::oom || (e.kind == EventKind::alloc && e.has_flag(kPreexisting));
}

Event scaled(Event e, const TraceVariant& v) {
  e.time_ns += v.time_shift_ns;
  if (size_is_bytes(e.kind)) e.size *= v.size_factor;
  e.address *= v.size_factor;  // 0 (no address) stays 0
  if (aux_is_bytes(e)) e.aux *= v.size_factor;
  return e;
}

}  // namespace

uint64_t write_scaled_copy(const std::string& from, const std::string& to, const TraceVariant& variant) {
  TraceReader reader(from);
  proto::TraceHeader header = reader.header();
  for (auto& device : *header.mutable_devices()) device.set_total_memory(device.total_memory() * variant.size_factor);
  if (header.capture_time_ns() != 0) header.set_capture_time_ns(header.capture_time_ns() + variant.time_shift_ns);
  header.set_source_file(from);
  TraceWriter writer(to);
  writer.begin(header);
  std::unordered_map<uint32_t, uint32_t> stacks = {{0, 0}};  // id in `from` -> id in `to`
  std::vector<Event> batch;
  uint64_t written = 0;
  while (reader.next_batch(batch))
    for (const Event& original : batch) {
      Event e = scaled(original, variant);
      if (const auto known = stacks.find(original.stack); known != stacks.end()) {
        e.stack = known->second;
      } else {
        e.stack = writer.intern_stack(reader.stack_frames(original.stack));
        stacks.emplace(original.stack, e.stack);
      }
      if (e.kind == EventKind::annotation)
        writer.append_annotation(e, reader.annotation(original));
      else
        writer.append(e);
      ++written;
    }
  writer.finish();
  return written;
}

}  // namespace memreplay::bench
