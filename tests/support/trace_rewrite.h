// A trace written again under another header, each event passed through `edit` (which may change
// it, or return false to leave it out); stacks and annotations are carried over. For tests that
// need a real trace with one thing changed.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "proto/trace_reader.h"
#include "proto/trace_writer.h"

namespace memreplay::testing {

inline void rewrite_trace(
    const std::string& in, const std::string& out, const std::function<void(proto::TraceHeader&)>& edit_header,
    const std::function<bool(Event&)>& edit = [](Event&) { return true; }) {
  TraceReader reader(in);
  proto::TraceHeader header = reader.header();
  edit_header(header);
  TraceWriter writer(out);
  writer.begin(header);
  std::vector<Event> batch;
  while (reader.next_batch(batch))
    for (Event e : batch) {
      if (!edit(e)) continue;
      if (e.stack != 0) e.stack = writer.intern_stack(reader.stack_frames(e.stack));
      if (e.kind == EventKind::annotation)
        writer.append_annotation(e, reader.annotation(e));
      else
        writer.append(e);
    }
  writer.finish();
}

}  // namespace memreplay::testing
