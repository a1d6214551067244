#include "replayer/live/stream_fences.h"

#include <algorithm>
#include <iterator>
#include <utility>

namespace memreplay {
namespace {

// Cuts [start, end) out of `set`, whatever ranges it overlaps; true when it overlapped any.
bool cut(detail::IntervalSet& set, uint64_t start, uint64_t end) {
  std::vector<std::pair<uint64_t, uint64_t>> pieces;
  auto it = set.upper_bound(start);
  if (it != set.begin()) --it;
  for (; it != set.end() && it->first < end; ++it) {
    const uint64_t from = std::max(it->first, start);
    const uint64_t to = std::min(it->second, end);
    if (from < to) pieces.emplace_back(from, to);
  }
  for (const auto& [from, to] : pieces) set.erase(from, to);
  return !pieces.empty();
}

}  // namespace

void StreamFences::add(StreamId stream, uint64_t address, uint64_t bytes) {
  if (bytes == 0) return;
  detail::IntervalSet& set = fenced_[stream];
  cut(set, address, address + bytes);  // a range is fenced once per stream
  set.insert(address, address + bytes);
}

std::vector<StreamId> StreamFences::claim(uint64_t address, uint64_t bytes, StreamId user) {
  std::vector<StreamId> waits;
  for (auto it = fenced_.begin(); it != fenced_.end();) {
    if (cut(it->second, address, address + bytes) && it->first != user) waits.push_back(it->first);
    it = it->second.empty() ? fenced_.erase(it) : std::next(it);
  }
  return waits;
}

size_t StreamFences::ranges() const {
  size_t count = 0;
  for (const auto& [stream, set] : fenced_) count += set.size();
  return count;
}

}  // namespace memreplay
