// The Event of one snapshot trace entry as the importer emits it, in one place for the output
// stage (pytorch_snapshot_importer.cpp) and the chunks encoded ahead while reading (chunks_ahead.h).
#pragma once

#include <cstdint>

#include "proto/event.h"
#include "recorder/import/pytorch/allocator_state.h"

namespace memreplay {

// `stream`: the entry's cudaStream_t (the step holds its label); `stack`: the sink's id, 0 for none.
inline Event entry_event(const TraceStep& step, uint32_t device, uint64_t time_ns, uint64_t stream, uint32_t stack,
                         uint16_t pool) {
  Event e;
  e.kind = step.kind;
  e.device = device;
  e.time_ns = time_ns;
  e.stream = stream;
  e.size = step.size;
  e.stack = stack;
  e.pool = pool;
  // An oom's address field holds device_free, an annotation's its text index (snapshot_reader.h).
  if (step.kind == EventKind::oom || step.kind == EventKind::annotation)
    e.aux = step.address;
  else
    e.address = step.address;
  return e;
}

}  // namespace memreplay
