// Sizes for frees that come without one. The CUDA interposer sees no size at cudaFree (nor the
// C++ API at on_free), yet a replay needs the bytes a free gives back: the writer thread remembers
// the size of every live block, segment and physical handle, and hands it to the matching free.
#pragma once

#include <cstdint>
#include <unordered_map>

#include "proto/event.h"

namespace memreplay::detail {

class FreeSizes {
 public:
  // An allocation is remembered; a free (segment_free, free_*, physical_free) of size 0 gets the
  // remembered size. Failed calls change nothing.
  void fill(Event& e);

 private:
  enum Table { kBlocks, kSegments, kPhysical };
  std::unordered_map<uint64_t, uint64_t> live_[3];  // address (handle for kPhysical) -> size
};

}  // namespace memreplay::detail
