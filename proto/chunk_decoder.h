// Decodes one chunk of a trace (a serialized proto::Chunk, see proto/trace.proto) into events.
//
// The event columns (fields 3..11) are decoded here rather than by protobuf: straight into the
// events, all columns of an event together, with varints decoded without branching on their
// length. That is what lets TraceReader read 50M+ events/s on one core; protobuf's generic parser
// plus a copy reached ~40M. The other fields (tables, annotations, scalars) are small and go
// through protobuf.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proto/event.h"
#include "proto/trace.pb.h"

namespace memreplay {

class ChunkDecoder {
 public:
  // Decodes bytes into events (their storage is reused) and every field but the event columns
  // into chunk. Checks all that the chunk alone can tell: column lengths, event kinds, annotation
  // indexes, and stack, frame and string ids against the chunk's own tables (ids below the
  // chunk's first ones are assumed to be in earlier chunks). Returns what is wrong, or nullopt.
  //
  // Columns must be packed and appear once, as every protobuf serializer writes them.
  std::optional<std::string> decode(std::string_view bytes, proto::Chunk& chunk, std::vector<Event>& events);

 private:
  std::string other_fields_;  // the serialized fields that protobuf parses
};

}  // namespace memreplay
