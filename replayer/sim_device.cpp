#include "replayer/sim_device.h"

#include <stdexcept>

namespace memreplay {
namespace {

// Windows shaped like the user-space VA layout seen in the traces (0x7f.. addresses).
constexpr uint64_t kHeapBase = 0x7e00'0000'0000ull;
constexpr uint64_t kHeapBytes = 1ull << 40;  // 1 TiB of VA for cudaMalloc
constexpr uint64_t kReservationBase = kHeapBase + kHeapBytes;

uint64_t round_up(uint64_t n, uint64_t unit) { return (n + unit - 1) / unit * unit; }

}  // namespace

SimDevice::SimDevice(Options options) : options_(options), next_reservation_(kReservationBase) {
  heap_free_[kHeapBase] = kHeapBase + kHeapBytes;
}

bool SimDevice::has_room_for(uint64_t bytes) const {
  const uint64_t limit = options_.capacity ? std::min(*options_.capacity, options_.total_memory)
                                           : options_.total_memory;
  return counters_.reserved_bytes + bytes <= limit;
}

uint64_t SimDevice::free_memory() const {
  const uint64_t limit = options_.capacity ? std::min(*options_.capacity, options_.total_memory)
                                           : options_.total_memory;
  return limit > counters_.reserved_bytes ? limit - counters_.reserved_bytes : 0;
}

void SimDevice::add_reserved(uint64_t bytes) {
  counters_.reserved_bytes += bytes;
  if (counters_.reserved_bytes > counters_.reserved_peak)
    counters_.reserved_peak = counters_.reserved_bytes;
}

std::optional<uint64_t> SimDevice::malloc(uint64_t bytes) {
  if (bytes == 0 || !has_room_for(bytes)) {
    ++counters_.failed_calls;
    return std::nullopt;
  }
  const uint64_t span = round_up(bytes, options_.granularity);
  // Top-down first fit: the free range with the highest address that can hold `span`.
  for (auto it = heap_free_.rbegin(); it != heap_free_.rend(); ++it) {
    const uint64_t start = it->first;
    const uint64_t end = it->second;
    if (end - start < span) continue;
    const uint64_t address = end - span;
    if (address == start) {
      heap_free_.erase(start);
    } else {
      it->second = address;
    }
    heap_live_[address] = LiveRange{span, bytes};
    ++counters_.malloc_calls;
    add_reserved(bytes);
    return address;
  }
  ++counters_.failed_calls;
  return std::nullopt;
}

void SimDevice::free(uint64_t address) {
  const auto live = heap_live_.find(address);
  if (live == heap_live_.end()) throw std::logic_error("SimDevice::free of an address it never handed out");
  uint64_t start = address;
  uint64_t end = address + live->second.span;
  counters_.reserved_bytes -= live->second.bytes;
  heap_live_.erase(live);
  ++counters_.free_calls;
  // Coalesce with the free neighbours on both sides.
  auto next = heap_free_.lower_bound(start);
  if (next != heap_free_.end() && next->first == end) {
    end = next->second;
    next = heap_free_.erase(next);
  }
  if (next != heap_free_.begin()) {
    auto prev = std::prev(next);
    if (prev->second == start) {
      start = prev->first;
      heap_free_.erase(prev);
    }
  }
  heap_free_[start] = end;
}

std::optional<uint64_t> SimDevice::reserve_address(uint64_t bytes) {
  const uint64_t address = next_reservation_;
  next_reservation_ += round_up(bytes, options_.granularity);
  ++counters_.reserve_calls;
  return address;
}

void SimDevice::release_address(uint64_t, uint64_t) { ++counters_.release_calls; }

bool SimDevice::map(uint64_t, uint64_t bytes) {
  if (!has_room_for(bytes)) {
    ++counters_.failed_calls;
    return false;
  }
  ++counters_.map_calls;
  add_reserved(bytes);
  return true;
}

void SimDevice::unmap(uint64_t, uint64_t bytes) {
  ++counters_.unmap_calls;
  counters_.reserved_bytes -= bytes;
}

}  // namespace memreplay
