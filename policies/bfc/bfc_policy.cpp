// bfc: TensorFlow/XLA's best-fit-with-coalescing allocator, as in
// tensorflow/tsl/framework/bfc_allocator.cc (BFCAllocator: AllocateRawInternal, FindChunkPtr,
// Extend, DeallocateFreeRegions) and its GPU options (allow_growth, TF_ENABLE_GPU_GARBAGE_COLLECTION).
//
// Modelled:
//   - requests round up to 256 bytes (kMinAllocationSize);
//   - free chunks are searched best fit by (size, address) (BFC's bins are size classes of that
//     same order, searched from the request's bin upwards); a chunk is split when it is at least
//     twice the request or the remainder reaches max_internal_fragmentation (128 MiB);
//   - freeing coalesces with free neighbours of the same region;
//   - region growth (Extend): allow_growth:False takes the whole memory limit in one region at the
//     first request (TF's default); allow_growth:True starts at 2 MiB and doubles: the region size
//     doubles until it holds the request, and doubles again after a region of unchanged size;
//     a failing cudaMalloc is retried at 90% while it still holds the request;
//   - garbage_collection:True (TF's default): when Extend fails, regions that are wholly free are
//     given back and Extend retried; empty_cache gives them back too.
// Left out: per-stream semantics (TF runs one compute stream; streams are ignored), the
// timestamped safe-reuse of chunks (freed_before_count), memory_limit's own bookkeeping apart from
// the device cap, and the allocator's stats/log.
// Options: allow_growth:True|False (default False), garbage_collection:True|False (default True),
// memory_limit:BYTES (default the --capacity, else the device's memory),
// max_internal_fragmentation:BYTES (default 128MiB).
#include <memory>

#include <absl/container/flat_hash_map.h>

#include "base/units.h"
#include "policies/detail/coalescing_regions.h"
#include "policies/detail/policy_options.h"
#include "policies/registry.h"

namespace memreplay {
namespace {

constexpr uint64_t kMinAllocation = 256;

struct BfcConfig {
  bool allow_growth = false;
  bool garbage_collection = true;
  std::optional<uint64_t> memory_limit;
  uint64_t max_internal_fragmentation = 128 * kMiB;
};

class BfcPolicy final : public Policy {
 public:
  BfcPolicy(Device& device, const BfcConfig& config)
      : device_(device),
        config_(config),
        limit_(config.memory_limit.value_or(device.capacity().value_or(device.total_memory()))),
        regions_(device,
                 [fragmentation = config.max_internal_fragmentation](uint64_t chunk, uint64_t request) {
                   return chunk >= 2 * request || chunk - request >= fragmentation;
                 }),
        next_region_(config.allow_growth ? 2 * kMiB : limit_) {}

 private:
  std::optional<Block> do_allocate(uint64_t bytes, StreamId) override {
    const uint64_t rounded = (bytes + kMinAllocation - 1) / kMinAllocation * kMinAllocation;
    auto chunk = regions_.allocate(rounded);
    if (!chunk && extend(rounded)) chunk = regions_.allocate(rounded);
    if (!chunk) return std::nullopt;
    return Block{chunk->address, chunk->size};
  }

  bool extend(uint64_t rounded) {
    if (try_extend(rounded)) return true;
    if (!config_.garbage_collection || regions_.free_regions() == 0) return false;
    return try_extend(rounded);
  }

  // BFCAllocator::Extend.
  bool try_extend(uint64_t rounded) {
    const uint64_t held = regions_.region_bytes();
    if (held >= limit_ || limit_ - held < rounded) return false;
    const uint64_t available = limit_ - held;
    bool increased = false;
    while (rounded > next_region_) {
      next_region_ *= 2;
      increased = true;
    }
    uint64_t bytes = std::min(next_region_, available);
    bool ok = regions_.add_region(bytes);
    while (!ok && bytes * 9 / 10 >= rounded) {  // out of memory: try 90% of the size, as TF does
      bytes = bytes * 9 / 10 / kMinAllocation * kMinAllocation;
      ok = bytes >= rounded && regions_.add_region(bytes);
    }
    if (!ok) return false;
    if (!increased) next_region_ *= 2;
    return true;
  }

  bool do_free(uint64_t address, StreamId) override { return regions_.free(address); }

  void do_empty_cache() override { regions_.free_regions(); }

  Device& device_;
  BfcConfig config_;
  uint64_t limit_;
  suballoc::CoalescingRegions regions_;
  uint64_t next_region_;  // curr_region_allocation_bytes_
};

std::unique_ptr<Policy> make_bfc(std::string_view text, Device& device) {
  using detail::Booleans;
  const detail::PolicyOptions options(
      "bfc", text, {"allow_growth", "garbage_collection", "memory_limit", "max_internal_fragmentation"});
  BfcConfig config;
  for (const auto& entry : options.entries()) {
    if (entry.key == "allow_growth") config.allow_growth = options.to_bool(entry, Booleans::either);
    if (entry.key == "garbage_collection") config.garbage_collection = options.to_bool(entry, Booleans::either);
    if (entry.key == "memory_limit") {
      config.memory_limit = options.to_bytes(entry);
      if (*config.memory_limit < kMinAllocation) options.fail(entry, "must be at least 256 bytes");
    }
    if (entry.key == "max_internal_fragmentation") config.max_internal_fragmentation = options.to_bytes(entry);
  }
  return std::make_unique<BfcPolicy>(device, config);
}

}  // namespace

MEMREPLAY_REGISTER_POLICY(bfc, .name = "bfc",
                          .description = "TensorFlow/XLA's best-fit-with-coalescing allocator (BFCAllocator)",
                          .options_help =
                              "allow_growth:True|False (default False: the whole limit at once), garbage_collection:"
                              "True|False (default True), memory_limit:BYTES (default the capacity), "
                              "max_internal_fragmentation:BYTES (default 128MiB)",
                          .factory = make_bfc,
                          .contract_option_sets = {"", "allow_growth:true",
                                                   "allow_growth:true,garbage_collection:false",
                                                   "allow_growth:True,max_internal_fragmentation:1MiB"},
                          .reserves_up_front =
                              "the whole memory limit (default: the capacity, else the device's "
                              "memory) unless allow_growth:True");

}  // namespace memreplay
