#include "replayer/sim/sim_device.h"

#include <algorithm>

namespace memreplay {
namespace {

// Windows shaped like the user-space VA layout seen in the traces (0x7f.. addresses).
constexpr uint64_t kHeapBase = 0x7e00'0000'0000ull;
constexpr uint64_t kHeapBytes = 1ull << 40;  // 1 TiB of VA for cudaMalloc
// Above the driver model's permanent chunks, which it places just over the heap's top: a policy
// that uses cudaMalloc and VMM reservations together (gmlake) must not see the two overlap.
constexpr uint64_t kReservationBase = kHeapBase + kHeapBytes + (4ull << 30);
constexpr uint64_t kPoolBase = kHeapBase - kHeapBytes;  // the stream-ordered pool's chunks
// The end of the heap's window with the driver model's permanent chunks above its top.
constexpr uint64_t kHeapWindowEnd = kHeapBase + kHeapBytes + (1ull << 30);

uint64_t round_up(uint64_t n, uint64_t unit) { return (n + unit - 1) / unit * unit; }

}  // namespace

SimDevice::SimDevice(Options options)
    : Device(options.total_memory, options.capacity),
      options_(options),
      heap_(kHeapBase + kHeapBytes, kHeapBytes),
      next_reservation_(kReservationBase),
      pool_(kPoolBase) {
  if (!options_.follow_recorded_placement) placement_.leave();
}

std::optional<uint64_t> SimDevice::do_malloc(uint64_t bytes) {
  // A replay that left the recorded calls never returns to them: no callback to build after that.
  if (placement_.in_step()) {
    const std::optional<uint64_t> recorded =
        placement_.replay_malloc(bytes, [&](uint64_t address) { return recorded_range_is_free(address, bytes); });
    if (recorded) {
      recorded_live_[*recorded] = *recorded + bytes;
      return recorded;
    }
  }
  return heap_.allocate(bytes);
}

std::optional<uint64_t> SimDevice::do_free(uint64_t address) {
  // The model's live map and recorded_live_ know each segment's bytes: no third map for them.
  std::optional<uint64_t> bytes;
  if (const auto recorded = recorded_live_.empty() ? recorded_live_.end() : recorded_live_.find(address);
      recorded != recorded_live_.end()) {
    bytes = recorded->second - address;
    recorded_live_.erase(recorded);
  } else {
    bytes = heap_.release(address);
  }
  if (bytes && placement_.in_step()) placement_.replay_free(address);
  return bytes;
}

bool SimDevice::recorded_range_is_free(uint64_t address, uint64_t bytes) const {
  if (address == 0 || address > UINT64_MAX - bytes) return false;
  const uint64_t end = address + bytes;
  if (end > kPoolBase && address < kHeapWindowEnd) return false;  // the model's windows
  if (end > kReservationBase && address < next_reservation_) return false;  // VMM reserved so far
  const auto next = recorded_live_.lower_bound(address);
  if (next != recorded_live_.end() && next->first < end) return false;
  return next == recorded_live_.begin() || std::prev(next)->second <= address;
}

std::optional<uint64_t> SimDevice::do_reserve_address(uint64_t bytes) {
  // Reservations go up from their base, past any segment placed where the trace recorded it.
  const uint64_t span = round_up(bytes, granularity());
  for (;;) {
    const auto after = recorded_live_.upper_bound(next_reservation_);
    if (after != recorded_live_.begin() && std::prev(after)->second > next_reservation_)
      next_reservation_ = round_up(std::prev(after)->second, granularity());
    else if (after != recorded_live_.end() && after->first < next_reservation_ + span)
      next_reservation_ = round_up(after->second, granularity());
    else
      break;
  }
  const uint64_t address = next_reservation_;
  next_reservation_ += span;
  return address;
}

std::vector<std::pair<uint64_t, uint64_t>> SimDevice::backed_ranges() const {
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  ranges.reserve(heap_.live_count() + recorded_live_.size() + mapped_ranges().size());
  heap_.for_each_live([&](uint64_t address, uint64_t bytes) { ranges.emplace_back(address, address + bytes); });
  for (const auto& [start, end] : recorded_live_) ranges.emplace_back(start, end);
  for (const auto& [start, end] : mapped_ranges()) ranges.emplace_back(start, end);
  for (const auto& chunk : pool_.chunk_ranges()) ranges.push_back(chunk);
  std::sort(ranges.begin(), ranges.end());
  return ranges;
}

bool SimDevice::do_configure_pool(const PoolConfig& config) {
  pool_.configure(config);
  return true;
}

std::optional<uint64_t> SimDevice::do_pool_malloc_async(uint64_t bytes, StreamId stream, uint64_t growth_room) {
  return pool_.allocate(bytes, stream, growth_room);
}

std::optional<uint64_t> SimDevice::do_pool_free_async(uint64_t address) {
  const uint64_t used = pool_.used_bytes();
  if (!pool_.free(address)) return std::nullopt;
  return used - pool_.used_bytes();
}

}  // namespace memreplay
