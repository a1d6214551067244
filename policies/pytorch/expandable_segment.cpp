// Page table of one expandable segment (see expandable_segment.h): whole pages, one device call
// per map or unmap.
#include "policies/pytorch/expandable_segment.h"

#include <stdexcept>

namespace memreplay::pytorch {

ExpandableSegment::ExpandableSegment(Device& device, StreamId stream, uint64_t page_size)
    : device_(device), stream_(stream), page_size_(page_size) {
  // Enough VA for 1 1/8 of the device, so pages unmapped early can be re-placed at the end.
  const uint64_t total = device.total_memory();
  max_pages_ = (total + total / 8 + page_size - 1) / page_size;
  if (const auto address = device_.reserve_address(max_pages_ * page_size_)) {
    base_ = *address;
    valid_ = true;
  }
}

SegmentRange ExpandableSegment::map(SegmentRange range) {
  const uint64_t begin = page_floor(range.address);
  const uint64_t end = page_ceil(range.address + range.size);
  if (begin * page_size_ + base_ != range.address) throw std::logic_error("ExpandableSegment::map: unaligned start");
  if (begin == end) return SegmentRange{range.address, 0};
  if (pages_.size() < end) pages_.resize(end, false);
  for (uint64_t i = begin; i < end; ++i)
    if (pages_[i]) throw std::logic_error("ExpandableSegment::map: page already mapped");
  const SegmentRange mapped{base_ + begin * page_size_, (end - begin) * page_size_};
  if (!device_.map(mapped.address, mapped.size)) {
    while (!pages_.empty() && !pages_.back()) pages_.pop_back();
    return SegmentRange{range.address, 0};
  }
  for (uint64_t i = begin; i < end; ++i) pages_[i] = true;
  mapped_bytes_ += mapped.size;
  return mapped;
}

SegmentRange ExpandableSegment::unmap(SegmentRange range) {
  const uint64_t begin = page_ceil(range.address);
  const uint64_t end = page_floor(range.address + range.size);
  if (begin >= end) return SegmentRange{range.address, 0};
  const SegmentRange unmapped{base_ + begin * page_size_, (end - begin) * page_size_};
  device_.unmap(unmapped.address, unmapped.size);
  for (uint64_t i = begin; i < end; ++i) pages_[i] = false;
  while (!pages_.empty() && !pages_.back()) pages_.pop_back();
  mapped_bytes_ -= unmapped.size;
  return unmapped;
}

void ExpandableSegment::release() {
  if (!valid_) return;
  device_.release_address(base_, max_pages_ * page_size_);
  valid_ = false;
}

}  // namespace memreplay::pytorch
