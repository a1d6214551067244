// torch.cuda.memory_stats()-style names for AllocatorStats (see allocator_stats.h).
#include "policies/pytorch/allocator_stats.h"

namespace memreplay::pytorch {
namespace {

void put(std::map<std::string, uint64_t>& out, const std::string& name, const Stat& stat) {
  auto clamp = [](int64_t v) { return v < 0 ? uint64_t{0} : static_cast<uint64_t>(v); };
  out[name + ".all.current"] = clamp(stat.current);
  out[name + ".all.peak"] = clamp(stat.peak);
  out[name + ".all.allocated"] = clamp(stat.allocated);
  out[name + ".all.freed"] = clamp(stat.freed);
}

}  // namespace

std::map<std::string, uint64_t> AllocatorStats::to_map() const {
  std::map<std::string, uint64_t> out;
  put(out, "allocation", allocation);
  put(out, "segment", segment);
  put(out, "active", active);
  put(out, "inactive_split", inactive_split);
  put(out, "allocated_bytes", allocated_bytes);
  put(out, "reserved_bytes", reserved_bytes);
  put(out, "active_bytes", active_bytes);
  put(out, "inactive_split_bytes", inactive_split_bytes);
  put(out, "requested_bytes", requested_bytes);
  put(out, "oversize_allocations", oversize_allocations);
  put(out, "oversize_segments", oversize_segments);
  out["num_alloc_retries"] = num_alloc_retries;
  out["num_ooms"] = num_ooms;
  out["num_sync_all_streams"] = num_sync_all_streams;
  out["num_device_alloc"] = num_device_alloc;
  out["num_device_free"] = num_device_free;
  return out;
}

}  // namespace memreplay::pytorch
