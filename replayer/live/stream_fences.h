// StreamFences: which streams may still have work queued on memory that went back to the policy.
// A block freed with work pending on stream S (its allocation stream, and every stream
// record_stream() named) is fenced by S: the policy may hand it out again at once, but a block
// handed out for another stream T overlapping a fenced range makes T wait for S first (an event
// recorded on S, which T waits on: stream_order.h). Handing a range out clears its fences: the
// new owner's work is ordered after them, and whoever gets the range next waits on the new owner.
//   fenced(S) = ∪ ranges freed with S pending - ∪ ranges handed out since
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "policies/detail/interval_set.h"
#include "policies/device.h"

namespace memreplay {

class StreamFences {
 public:
  // [address, address + bytes) was freed while work queued on `stream` may still use it.
  void add(StreamId stream, uint64_t address, uint64_t bytes);
  // [address, address + bytes) is handed out for use on `user`: the other streams whose fences
  // overlap it, which `user` must wait for. The range leaves every stream's fences.
  std::vector<StreamId> claim(uint64_t address, uint64_t bytes, StreamId user);
  // Every stream has finished its work (the device was synchronized): nothing is fenced.
  void clear() { fenced_.clear(); }
  // Fenced ranges of every stream, for tests and diagnostics.
  size_t ranges() const;

 private:
  std::map<StreamId, detail::IntervalSet> fenced_;
};

}  // namespace memreplay
