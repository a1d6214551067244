// torch.cuda.memory_stats()-style names for PolicyStats (see policy_stats.h).
#include "policies/policy_stats.h"

namespace memreplay {
namespace {

void put(std::map<std::string, uint64_t>& out, const std::string& name, const Stat& stat) {
  auto clamp = [](int64_t v) { return v < 0 ? uint64_t{0} : static_cast<uint64_t>(v); };
  out[name + ".all.current"] = clamp(stat.current);
  out[name + ".all.peak"] = clamp(stat.peak);
  out[name + ".all.allocated"] = clamp(stat.allocated);
  out[name + ".all.freed"] = clamp(stat.freed);
}

Stat reserved_stat(const DeviceCounters& device) {
  auto as_signed = [](uint64_t v) { return static_cast<int64_t>(v); };
  return Stat{as_signed(device.reserved_bytes), as_signed(device.reserved_peak),
              as_signed(device.reserved_bytes_allocated), as_signed(device.reserved_bytes_freed)};
}

}  // namespace

std::map<std::string, uint64_t> stats_by_name(const PolicyStats& stats, const DeviceCounters& device) {
  std::map<std::string, uint64_t> out;
  if (const auto& c = stats.caching) {
    put(out, "allocation", c->allocation);
    put(out, "segment", c->segment);
    put(out, "active", c->active);
    put(out, "inactive_split", c->inactive_split);
    put(out, "allocated_bytes", c->allocated_bytes);
    put(out, "reserved_bytes", reserved_stat(device));
    put(out, "active_bytes", c->active_bytes);
    put(out, "inactive_split_bytes", c->inactive_split_bytes);
    put(out, "requested_bytes", c->requested_bytes);
    put(out, "oversize_allocations", c->oversize_allocations);
    put(out, "oversize_segments", c->oversize_segments);
    out["num_alloc_retries"] = stats.alloc_retries;
    out["num_ooms"] = stats.ooms;
    out["num_sync_all_streams"] = c->num_sync_all_streams;
    // PyTorch counts one per cudaMalloc or map_block / cudaFree or unmap_block: the device's calls.
    out["num_device_alloc"] = device.malloc_calls + device.map_calls;
    out["num_device_free"] = device.free_calls + device.unmap_calls;
  }
  if (stats.uses_device_pool) {
    out["pool_reserved_mem_high"] = device.pool_reserved_peak;
    out["pool_used_mem_high"] = device.pool_used_peak;
  }
  return out;
}

}  // namespace memreplay
