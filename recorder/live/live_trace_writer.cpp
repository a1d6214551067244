#include "recorder/live/live_trace_writer.h"

namespace memreplay {

LiveTraceWriter::LiveTraceWriter(std::string path, const LiveTraceHeader& header, uint32_t events_per_chunk,
                                 int zstd_level)
    : encoder_("LiveTraceWriter", path, path, {events_per_chunk, zstd_level}) {
  encoder_.begin(header);
}

}  // namespace memreplay
