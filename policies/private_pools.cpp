#include "policies/private_pools.h"

#include <algorithm>

namespace memreplay::detail {

PoolDevice::PoolDevice(Device& device) : Device(device.total_memory(), device.capacity()), device_(device) {}

std::optional<uint64_t> PoolDevice::do_malloc(uint64_t bytes) {
  const std::optional<uint64_t> address = device_.malloc(bytes);
  if (address) mallocs_.emplace(*address, bytes);
  return address;
}

std::optional<uint64_t> PoolDevice::do_free(uint64_t address) {
  const auto it = mallocs_.find(address);
  if (it == mallocs_.end()) return std::nullopt;
  const uint64_t bytes = it->second;
  freed_mallocs_.push_back(address);  // a graph may still write it: freed with the pool
  mallocs_.erase(it);
  return bytes;
}

std::optional<uint64_t> PoolDevice::do_reserve_address(uint64_t bytes) {
  const std::optional<uint64_t> address = device_.reserve_address(bytes);
  if (address) reservations_.emplace(*address, bytes);
  return address;
}

void PoolDevice::do_release_address(uint64_t, uint64_t) {
  // Pages held in it may still be mapped on the device: the range goes with the pool.
}

bool PoolDevice::do_map(uint64_t address, uint64_t bytes) {
  // Pages still held where they were are taken back as they are; the rest are mapped, a call for
  // each run of them.
  const uint64_t end = address + bytes;
  std::vector<std::pair<uint64_t, uint64_t>> taken, mapped;
  uint64_t cursor = address;
  const auto map_run = [&](uint64_t from, uint64_t to) {
    if (from >= to) return true;
    if (!device_.map(from, to - from)) return false;
    mapped.emplace_back(from, to);
    return true;
  };
  auto held = held_pages_.upper_bound(address);
  if (held != held_pages_.begin() && std::prev(held)->second > address) --held;
  bool ok = true;
  for (; ok && held != held_pages_.end() && held->first < end; ++held) {
    const uint64_t from = std::max(held->first, address), to = std::min(held->second, end);
    ok = map_run(cursor, from);
    taken.emplace_back(from, to);
    cursor = to;
  }
  ok = ok && map_run(cursor, end);
  if (!ok) {  // nothing stays mapped
    for (const auto& [from, to] : mapped) device_.unmap(from, to - from);
    return false;
  }
  for (const auto& [from, to] : taken) held_pages_.erase(from, to);
  return true;
}

void PoolDevice::do_unmap(uint64_t address, uint64_t bytes) { held_pages_.insert(address, address + bytes); }

void PoolDevice::give_back() {
  // The pages the instance still maps and those it gave up, in runs inside one reservation each.
  IntervalSet pages = held_pages_;
  for (const auto& [start, end] : mapped_ranges()) pages.insert(start, end);
  for (const auto& [start, end] : pages) {
    for (uint64_t from = start; from < end;) {
      const auto reservation = std::prev(reservations_.upper_bound(from));
      const uint64_t to = std::min(end, reservation->first + reservation->second);
      device_.unmap(from, to - from);
      from = to;
    }
  }
  held_pages_.clear();
  for (const uint64_t address : freed_mallocs_) free_held(device_, address);
  for (const auto& [address, bytes] : mallocs_) free_held(device_, address);
  freed_mallocs_.clear();
  mallocs_.clear();
  for (const auto& [address, bytes] : reservations_) device_.release_address(address, bytes);
  reservations_.clear();
}

PrivatePools::~PrivatePools() = default;

PrivatePools::Instance& PrivatePools::instance(PoolId pool) {
  const auto [it, made] = instances_.try_emplace(pool);
  if (made) {
    it->second.device = std::make_unique<PoolDevice>(device_);
    it->second.policy = make_(*it->second.device);
  }
  return it->second;
}

std::optional<Block> PrivatePools::allocate(uint64_t bytes, StreamId stream, PoolId pool, Capture capture) {
  Instance& serving = instance(pool);
  // A released pool that is used again is a new one (PyTorch numbers its pools afresh; a trace may not).
  serving.released = false;
  const std::optional<Block> block = serving.policy->allocate_in_pool(bytes, stream, 0, capture);
  if (block) {
    pool_of_block_.emplace(block->address, pool);
    ++serving.live_blocks;
  }
  return block;
}

bool PrivatePools::free(uint64_t address, StreamId stream) {
  const auto it = pool_of_block_.find(address);
  if (it == pool_of_block_.end()) return false;
  const PoolId pool = it->second;
  pool_of_block_.erase(it);
  Instance& serving = instances_.at(pool);
  serving.policy->free(address, stream);
  --serving.live_blocks;
  retire_if_done(pool);
  return true;
}

void PrivatePools::release(PoolId pool) {
  const auto it = instances_.find(pool);
  if (it == instances_.end()) return;
  it->second.released = true;
  retire_if_done(pool);
}

void PrivatePools::retire_if_done(PoolId pool) {
  const auto it = instances_.find(pool);
  if (it == instances_.end() || !it->second.released || it->second.live_blocks != 0) return;
  retired_retries_ += it->second.policy->stats().alloc_retries;
  it->second.policy.reset();  // what its destructor gives back stays held until give_back()
  it->second.device->give_back();
  for (auto segment = adopted_segments_.begin(); segment != adopted_segments_.end();)
    segment = segment->second.second == pool ? adopted_segments_.erase(segment) : std::next(segment);
  instances_.erase(it);
}

std::optional<uint64_t> PrivatePools::adopt_segment(uint64_t bytes, StreamId stream, PoolId pool) {
  const std::optional<uint64_t> address = instance(pool).policy->adopt_segment(bytes, stream);
  if (address) adopted_segments_[*address] = {*address + bytes, pool};
  return address;
}

std::optional<std::optional<Block>> PrivatePools::adopt_block(uint64_t address, uint64_t size, uint64_t requested,
                                                              StreamId stream) {
  auto segment = adopted_segments_.upper_bound(address);
  if (segment == adopted_segments_.begin() || std::prev(segment)->second.first <= address) return std::nullopt;
  const PoolId pool = std::prev(segment)->second.second;
  Instance& serving = instances_.at(pool);
  std::optional<Block> block = serving.policy->adopt_block(address, size, requested, stream);
  if (block) {
    pool_of_block_.emplace(block->address, pool);
    ++serving.live_blocks;
  }
  return block;
}

void PrivatePools::add_stats(PolicyStats& stats) const {
  stats.alloc_retries += retired_retries_;
  for (const auto& [pool, serving] : instances_) stats.alloc_retries += serving.policy->stats().alloc_retries;
}

}  // namespace memreplay::detail
