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
    : options_(options),
      limit_(options.capacity ? std::min(*options.capacity, options.total_memory) : options.total_memory),
      heap_(kHeapBase + kHeapBytes, kHeapBytes),
      next_reservation_(kReservationBase),
      pool_(kPoolBase) {
  if (!options_.follow_recorded_placement) placement_.leave();
}

bool SimDevice::has_room_for(uint64_t bytes) const { return counters_.reserved_bytes + bytes <= limit_; }

uint64_t SimDevice::free_memory() const {
  return limit_ > counters_.reserved_bytes ? limit_ - counters_.reserved_bytes : 0;
}

std::optional<uint64_t> SimDevice::malloc(uint64_t bytes) {
  if (bytes == 0 || !has_room_for(bytes)) {
    ++counters_.failed_calls;
    return std::nullopt;
  }
  // A replay that left the recorded calls never returns to them: no callback to build after that.
  std::optional<uint64_t> address;
  if (placement_.in_step())
    address =
        placement_.replay_malloc(bytes, [&](uint64_t recorded) { return recorded_range_is_free(recorded, bytes); });
  if (address)
    recorded_live_[*address] = *address + bytes;
  else
    address = heap_.allocate(bytes);
  if (!address) {
    ++counters_.failed_calls;
    return std::nullopt;
  }
  ++counters_.malloc_calls;
  counters_.add_reserved(bytes);
  return address;
}

bool SimDevice::free(uint64_t address) {
  // The model's live map and recorded_live_ know each segment's bytes: no third map for them.
  std::optional<uint64_t> bytes;
  if (const auto recorded = recorded_live_.empty() ? recorded_live_.end() : recorded_live_.find(address);
      recorded != recorded_live_.end()) {
    bytes = recorded->second - address;
    recorded_live_.erase(recorded);
  } else {
    bytes = heap_.release(address);
  }
  if (!bytes) return false;
  if (placement_.in_step()) placement_.replay_free(address);
  counters_.remove_reserved(*bytes);
  ++counters_.free_calls;
  return true;
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

std::optional<uint64_t> SimDevice::reserve_address(uint64_t bytes) {
  // Reservations go up from their base, past any segment placed where the trace recorded it.
  const uint64_t span = round_up(bytes, options_.granularity);
  for (;;) {
    const auto after = recorded_live_.upper_bound(next_reservation_);
    if (after != recorded_live_.begin() && std::prev(after)->second > next_reservation_)
      next_reservation_ = round_up(std::prev(after)->second, options_.granularity);
    else if (after != recorded_live_.end() && after->first < next_reservation_ + span)
      next_reservation_ = round_up(after->second, options_.granularity);
    else
      break;
  }
  const uint64_t address = next_reservation_;
  next_reservation_ += round_up(bytes, options_.granularity);
  ++counters_.reserve_calls;
  return address;
}

void SimDevice::release_address(uint64_t, uint64_t) { ++counters_.release_calls; }

bool SimDevice::map(uint64_t address, uint64_t bytes) {
  // Pages are bounded by the device's memory, not by the per-process cap: PyTorch checks its
  // fraction cap against the segment size before it maps, and the pages it then maps may end
  // past the cap (the real driver does not refuse them). Policies that map apply the cap.
  if (counters_.reserved_bytes + bytes > options_.total_memory) {
    ++counters_.failed_calls;
    return false;
  }
  ++counters_.map_calls;
  counters_.add_reserved(bytes);
  uint64_t start = address;
  uint64_t end = address + bytes;
  auto next = mapped_.lower_bound(start);
  if (next != mapped_.end() && next->first == end) {
    end = next->second;
    next = mapped_.erase(next);
  }
  if (next != mapped_.begin() && std::prev(next)->second == start) {
    start = std::prev(next)->first;
    mapped_.erase(std::prev(next));
  }
  mapped_[start] = end;
  return true;
}

void SimDevice::unmap(uint64_t address, uint64_t bytes) {
  ++counters_.unmap_calls;
  counters_.remove_reserved(bytes);
  // Cut [address, address+bytes) out of the mapped range that holds it.
  auto it = mapped_.upper_bound(address);
  if (it == mapped_.begin()) return;
  --it;
  const uint64_t start = it->first;
  const uint64_t end = it->second;
  if (address + bytes > end) return;
  mapped_.erase(it);
  if (start < address) mapped_[start] = address;
  if (address + bytes < end) mapped_[address + bytes] = end;
}

std::vector<std::pair<uint64_t, uint64_t>> SimDevice::backed_ranges() const {
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  ranges.reserve(heap_.live_count() + recorded_live_.size() + mapped_.size());
  heap_.for_each_live([&](uint64_t address, uint64_t bytes) { ranges.emplace_back(address, address + bytes); });
  for (const auto& [start, end] : recorded_live_) ranges.emplace_back(start, end);
  for (const auto& [start, end] : mapped_) ranges.emplace_back(start, end);
  for (const auto& chunk : pool_.chunk_ranges()) ranges.push_back(chunk);
  std::sort(ranges.begin(), ranges.end());
  return ranges;
}

bool SimDevice::configure_pool(const PoolConfig& config) {
  pool_.configure(config);
  return true;
}

std::optional<uint64_t> SimDevice::pool_malloc_async(uint64_t bytes, StreamId stream) {
  const auto address = pool_.allocate(bytes, stream, free_memory());
  if (!address) {
    ++counters_.failed_calls;
    return std::nullopt;
  }
  ++counters_.pool_malloc_calls;
  update_pool_counters();
  return address;
}

bool SimDevice::pool_free_async(uint64_t address) {
  if (!pool_.free(address)) return false;
  ++counters_.pool_free_calls;
  update_pool_counters();
  return true;
}

void SimDevice::pool_trim(uint64_t keep_bytes) {
  pool_.trim(keep_bytes);
  ++counters_.pool_trim_calls;
  update_pool_counters();
}

void SimDevice::synchronize() {
  pool_.synchronize();
  update_pool_counters();
}

void SimDevice::stream_event(StreamId stream, uint64_t event_id, bool is_wait) {
  pool_.stream_event(stream, event_id, is_wait);
}

void SimDevice::update_pool_counters() {
  counters_.pool_used_bytes = pool_.used_bytes();
  counters_.pool_used_peak = std::max(counters_.pool_used_peak, counters_.pool_used_bytes);
  // Reserved memory changes only when the pool grows or releases chunks (rarely).
  if (pool_.reserved_bytes() != counters_.pool_reserved_bytes) [[unlikely]]
    update_pool_reserved();
}

void SimDevice::update_pool_reserved() {
  const uint64_t reserved = pool_.reserved_bytes();
  if (reserved >= counters_.pool_reserved_bytes)
    counters_.add_reserved(reserved - counters_.pool_reserved_bytes);
  else
    counters_.remove_reserved(counters_.pool_reserved_bytes - reserved);
  counters_.pool_reserved_bytes = reserved;
  counters_.pool_reserved_peak = std::max(counters_.pool_reserved_peak, reserved);
  counters_.pool_grow_calls = pool_.grow_count();
}

}  // namespace memreplay
