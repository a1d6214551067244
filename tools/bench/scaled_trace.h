// A synthetic job from a real one: the same events with every size and address multiplied by an
// integer factor and every time shifted. An integer factor keeps the recorded layout exact (blocks
// stay inside their segments, nothing overlaps), so the copy replays like a bigger run of the same
// program. The fleet generator (synthetic_fleet.cpp) writes thousands of these.
#pragma once

#include <cstdint>
#include <string>

namespace memreplay::bench {

struct TraceVariant {
  uint64_t size_factor = 1;  // sizes, addresses and the devices' memory, times this
  uint64_t time_shift_ns = 0;  // added to every time
};

// Writes the scaled copy of `from` (read with TraceReader, up to its last whole chunk) to `to`
// (TraceWriter: whole or absent). Returns the events written. Throws InputError for a bad input.
uint64_t write_scaled_copy(const std::string& from, const std::string& to, const TraceVariant& variant);

}  // namespace memreplay::bench
