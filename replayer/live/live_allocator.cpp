#include "replayer/live/live_allocator.h"

#include <algorithm>
#include <utility>

#include "base/units.h"
#include "policies/registry.h"

namespace memreplay {
namespace {

void put(std::map<std::string, uint64_t>& out, const std::string& name, const Stat& stat) {
  const auto clamp = [](int64_t v) { return v < 0 ? uint64_t{0} : static_cast<uint64_t>(v); };
  out[name + ".all.current"] = clamp(stat.current);
  out[name + ".all.peak"] = clamp(stat.peak);
  out[name + ".all.allocated"] = clamp(stat.allocated);
  out[name + ".all.freed"] = clamp(stat.freed);
}

}  // namespace

LiveAllocator::LiveAllocator(std::unique_ptr<Device> device, std::string_view policy_spec,
                             std::unique_ptr<StreamOrder> order, AllocationObserver* observer)
    : device_(std::move(device)),
      order_(std::move(order)),
      policy_(PolicyRegistry::instance().create(policy_spec, *device_)),
      policy_spec_(policy_spec),
      observer_(observer) {}

std::optional<uint64_t> LiveAllocator::allocate(uint64_t bytes, StreamId stream, PoolId pool) {
  const std::lock_guard lock(mutex_);
  const std::optional<Block> block = policy_->allocate_in_pool(bytes, stream, pool);
  if (!block) {
    oom_message_ = describe_oom(bytes);
    if (observer_) observer_->on_oom(bytes, stream, device_->free_memory());
    return std::nullopt;
  }
  for (const StreamId producer : fences_.claim(block->address, block->size, stream)) {
    order_->wait(stream, producer);
    ++cross_stream_waits_;
  }
  live_.insert_or_assign(block->address, LiveBlock{block->size, bytes, stream, pool, {}});
  measured_.allocated_bytes.increase(block->size);
  measured_.requested_bytes.increase(bytes);
  measured_.allocation.increase(1);
  ++handed_out_;
  if (observer_) observer_->on_alloc(block->address, bytes, stream, pool);
  return block->address;
}

bool LiveAllocator::free(uint64_t address) {
  const std::lock_guard lock(mutex_);
  const auto it = live_.find(address);
  if (it == live_.end()) return false;
  const LiveBlock block = std::move(it->second);
  live_.erase(it);
  policy_->free(address, block.stream);
  fences_.add(block.stream, address, block.size);
  for (const StreamId other : block.other_streams) fences_.add(other, address, block.size);
  measured_.allocated_bytes.decrease(block.size);
  measured_.requested_bytes.decrease(block.requested);
  measured_.allocation.decrease(1);
  if (observer_) observer_->on_free(address, block.requested, block.stream, block.pool);
  return true;
}

bool LiveAllocator::record_stream(uint64_t address, StreamId stream) {
  const std::lock_guard lock(mutex_);
  const auto it = live_.find(address);
  if (it == live_.end()) return false;
  LiveBlock& block = it->second;
  if (stream != block.stream &&
      std::find(block.other_streams.begin(), block.other_streams.end(), stream) == block.other_streams.end())
    block.other_streams.push_back(stream);
  return true;
}

void LiveAllocator::empty_cache() {
  const std::lock_guard lock(mutex_);
  // As PyTorch's release_cached_blocks: no stream may still use what goes back to the driver.
  order_->synchronize();
  fences_.clear();
  policy_->empty_cache();
  if (observer_) observer_->on_empty_cache();
}

void LiveAllocator::name_pool(PoolId pool, std::pair<uint64_t, uint64_t> torch_id, std::string_view kind) {
  const std::lock_guard lock(mutex_);
  if (observer_) observer_->on_name_pool(pool, torch_id, kind);
}

void LiveAllocator::release_pool(PoolId pool) {
  const std::lock_guard lock(mutex_);
  policy_->release_pool(pool);
  if (observer_) observer_->on_release_pool(pool);
}

bool LiveAllocator::used() const {
  const std::lock_guard lock(mutex_);
  return handed_out_ > 0;
}

DeviceCounters LiveAllocator::device_counters() const {
  const std::lock_guard lock(mutex_);
  return device_->counters();
}

std::map<std::string, uint64_t> LiveAllocator::stats() const {
  const std::lock_guard lock(mutex_);
  const DeviceCounters& device = device_->counters();
  const PolicyStats policy = policy_->stats();
  std::map<std::string, uint64_t> out = stats_by_name(policy, device);
  put(out, "allocated_bytes", measured_.allocated_bytes);
  put(out, "requested_bytes", measured_.requested_bytes);
  put(out, "allocation", measured_.allocation);
  put(out, "reserved_bytes",
      Stat{static_cast<int64_t>(device.reserved_bytes), static_cast<int64_t>(device.reserved_peak),
           static_cast<int64_t>(device.reserved_bytes_allocated), static_cast<int64_t>(device.reserved_bytes_freed)});
  out["num_alloc_retries"] = policy.alloc_retries;
  out["num_ooms"] = policy.ooms;
  out["num_device_alloc"] = device.malloc_calls + device.map_calls;
  out["num_device_free"] = device.free_calls + device.unmap_calls;
  out["device_calls"] = device.malloc_calls + device.free_calls + device.map_calls + device.unmap_calls +
                        device.pool_grow_calls + device.pool_trim_calls;
  out["device_call_ns"] = device.device_call_ns;
  out["cross_stream_waits"] = cross_stream_waits_;
  return out;
}

std::string LiveAllocator::oom_message() const {
  const std::lock_guard lock(mutex_);
  return oom_message_;
}

std::string LiveAllocator::describe_oom(uint64_t bytes) const {
  const DeviceCounters& device = device_->counters();
  std::string message = "CUDA out of memory under memreplay policy '" + policy_spec_ + "': tried to allocate " +
                        format_bytes(bytes) + "; the policy has " + format_bytes(device.reserved_bytes) +
                        " reserved (peak " + format_bytes(device.reserved_peak) + "), of which " +
                        format_bytes(static_cast<uint64_t>(std::max<int64_t>(0, measured_.allocated_bytes.current))) +
                        " allocated to live blocks; the GPU has " + format_bytes(device_->total_memory()) + " in all";
  if (device_->capacity()) message += ", a cap of " + format_bytes(*device_->capacity()) + " for this process";
  message += ", " + format_bytes(device_->free_memory()) + " free for this process";
  return message;
}

}  // namespace memreplay
