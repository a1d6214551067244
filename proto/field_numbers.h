// Field numbers of the messages of trace.proto, for the code that encodes them without protobuf
// (chunk_encoder.cpp, trace_encoder.cpp). schema_check.cpp holds each one against the
// protobuf-generated classes with a static_assert, so a renumbering in trace.proto stops the build
// instead of writing files that read back wrong.
#pragma once

#include <cstdint>

namespace memreplay::format {

namespace header_field {
enum : uint32_t {
  format_major = 1,
  format_minor = 2,
  source = 3,
  source_file = 4,
  capture_time_ns = 5,
  command_line = 6,
  pid = 7,
  devices = 8,
  allocator_settings = 9,
  producer = 10,
  starts_mid_run = 11,
  pools = 12,
  captures_flagged = 13
};
}
namespace pool_field {
enum : uint32_t { id = 1, kind = 2, torch_id_first = 3, torch_id_second = 4, name = 5 };
}
namespace device_field {
enum : uint32_t {
  index = 1,
  name = 2,
  total_memory = 3,
  cap_bytes = 4,
  segments_of_unknown_pool = 5,
  allocations_of_unknown_pool = 6
};
}
// The key and value of every map entry (allocator_settings, events_per_kind).
namespace map_entry_field {
enum : uint32_t { key = 1, value = 2 };
}

namespace chunk_field {
enum : uint32_t {
  first_event = 1,
  base_time_ns = 2,
  // the event columns
  kind = 3,
  time_delta = 4,
  device = 5,
  stream = 6,
  address_delta = 7,
  size = 8,
  stack = 9,
  flags = 10,
  aux = 11,
  // the interning tables and annotations
  first_string_id = 12,
  strings = 13,
  first_frame_id = 14,
  frames = 15,
  first_stack_id = 16,
  stacks = 17,
  annotations = 18,
  // the pool column, apart from the others: added in format 1.1
  pool = 19
};
}
namespace frame_field {
enum : uint32_t { filename = 1, line = 2, name = 3 };
}
namespace stack_field {
enum : uint32_t { frames = 1 };
}
namespace annotation_field {
enum : uint32_t { keys = 1, values = 2 };
}

namespace index_entry_field {
enum : uint32_t { offset = 1, first_event = 2, event_count = 3, min_time_ns = 4, max_time_ns = 5 };
}
namespace footer_field {
enum : uint32_t {
  chunks = 1,
  total_events = 2,
  events_per_kind = 3,
  min_time_ns = 4,
  max_time_ns = 5,
  string_count = 6,
  frame_count = 7,
  stack_count = 8
};
}

}  // namespace memreplay::format
