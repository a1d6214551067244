// ChunkDecoder on arbitrary (decompressed) chunk bytes: an error message or events, never a
// crash; the events it returns have valid kinds.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "proto/chunk_decoder.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static memreplay::ChunkDecoder decoder;
  static memreplay::proto::Chunk chunk;
  static std::vector<memreplay::Event> events;
  const auto error = decoder.decode(std::string_view(reinterpret_cast<const char*>(data), size), chunk, events);
  if (!error)
    for (const memreplay::Event& e : events)
      if (!memreplay::is_valid_event_kind(static_cast<uint32_t>(e.kind))) std::abort();
  return 0;
}
