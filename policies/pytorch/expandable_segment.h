// An expandable segment (expandable_segments:True): one virtual-address reservation per
// (stream, pool kind) that gains and loses physical pages over time.
//
//   VA   [ page | page | page | ...                                        ]  ceil(1.125 x total
//         mapped.....  unmapped ...                                            memory / page) pages
//
// Page size: 2 MiB for the small pool, large_segment_size (20 MiB) for the large pool. map() backs
// every page touched by a range (whole pages, rounded outwards) with one Device::map call, so a
// PyTorch map_block is one counted device allocation; unmap() gives back only the pages lying
// wholly inside a range (rounded inwards) with one Device::unmap call. A failed map leaves nothing
// mapped. The blocks covering the VA live in the allocator; this class only owns the page table.
#pragma once

#include <cstdint>
#include <vector>

#include "policies/device.h"

namespace memreplay::pytorch {

struct SegmentRange {
  uint64_t address = 0;
  uint64_t size = 0;
};

class ExpandableSegment {
 public:
  // Reserves the VA on `device`; valid() is false when the device refused.
  ExpandableSegment(Device& device, StreamId stream, uint64_t page_size);
  ExpandableSegment(const ExpandableSegment&) = delete;
  ExpandableSegment& operator=(const ExpandableSegment&) = delete;

  bool valid() const { return valid_; }
  uint64_t base() const { return base_; }
  uint64_t size() const { return max_pages_ * page_size_; }  // the whole reserved VA
  uint64_t page_size() const { return page_size_; }
  uint64_t mapped_bytes() const { return mapped_bytes_; }
  StreamId stream() const { return stream_; }

  // Maps the pages covering `range` (its start must be page-aligned); returns the mapped range,
  // size 0 when the device had no room.
  SegmentRange map(SegmentRange range);
  // Unmaps the pages wholly inside `range`; returns them (size 0: none).
  SegmentRange unmap(SegmentRange range);
  // cuMemAddressFree of the reservation; the segment must be fully unmapped.
  void release();

 private:
  uint64_t page_floor(uint64_t address) const { return (address - base_) / page_size_; }
  uint64_t page_ceil(uint64_t address) const { return (address - base_ + page_size_ - 1) / page_size_; }

  Device& device_;
  StreamId stream_;
  uint64_t page_size_;
  uint64_t max_pages_;
  uint64_t base_ = 0;
  bool valid_ = false;
  uint64_t mapped_bytes_ = 0;
  std::vector<bool> pages_;  // mapped pages; trimmed after its last mapped page
};

}  // namespace memreplay::pytorch
