// rmm_pool: RAPIDS RMM's pool_memory_resource (cpp/src/mr/detail/pool_memory_resource_impl.cpp,
// detail/stream_ordered_memory_resource.hpp, detail/coalescing_free_list.hpp), as
// docs/policies.md describes it.
//
// Modelled:
//   - requests round up to 256 bytes (allocation_alignment); blocks are carved best fit from
//     coalesced free blocks of the pool's upstream allocations and split exactly;
//   - free lists are per stream: a request takes from its own stream's list first and otherwise
//     from another stream's (where RMM makes the stream wait on the free's event and merges that
//     list into its own); a block freed goes to the list of the stream that frees it and
//     coalesces with its neighbours of the same upstream allocation and stream;
//   - growth (size_to_grow): without maximum_pool_size, max(request, current pool size), i.e. the
//     pool doubles; with it, max(request, remaining / 2) while the request fits what remains; a
//     failing upstream allocation is retried at half the size down to the request
//     (try_to_expand); initial_pool_size is allocated at construction (default 0, as the replay
//     benchmark uses it);
//   - the pool never gives memory back before it is destroyed (empty_cache does nothing).
// Left out: the per-thread default stream, the event objects themselves, and RMM's logging.
// Options: initial_pool_size:BYTES (default 0), maximum_pool_size:BYTES (default none; the device
// cap still applies).
#include <memory>

#include <absl/container/flat_hash_map.h>

#include "policies/rmm/rmm_pool_policy.h"

#include "policies/detail/binned_ranges.h"
#include "policies/registry.h"

namespace memreplay {
namespace {

constexpr uint64_t kAlignment = 256;

uint64_t align(uint64_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

// Free lists per stream over one set of upstream allocations, coalescing within a stream: each
// upstream allocation is a chain of BinnedRanges, each stream's free list a group of it.
class RmmPoolPolicy final : public Policy {
 public:
  RmmPoolPolicy(Device& device, const RmmPoolConfig& config) : device_(device), config_(config) {
    if (config.initial_pool_size > 0 && !grow_by(align(config.initial_pool_size), 0))
      throw PolicySpecError("rmm_pool: initial_pool_size does not fit on the device");
  }

 private:
  using Range = suballoc::Range;

  std::optional<Block> do_allocate(uint64_t bytes, StreamId stream) override {
    const uint64_t size = align(bytes);
    Range* block = take(size, stream);
    if (block == nullptr && expand(size, stream)) block = take(size, stream);
    if (block == nullptr) return std::nullopt;
    live_.emplace(block->start, block);
    return Block{block->start, size};
  }

  // Best fit on `stream`'s list, else on any other stream's (lowest stream id first).
  Range* take(uint64_t size, StreamId stream) {
    if (Range* block = take_from(size, stream)) return block;
    for (const uint64_t other : ranges_.groups())
      if (other != stream)
        if (Range* block = take_from(size, other)) return block;
    return nullptr;
  }

  Range* take_from(uint64_t size, StreamId stream) {
    Range* fit = nullptr;  // the first in (size, address) order
    ranges_.for_each_fit(
        size,
        [&](Range* range) {
          fit = range;
          return false;
        },
        stream);
    return fit == nullptr ? nullptr : ranges_.carve(fit, fit->start, size);  // split exactly
  }

  bool expand(uint64_t size, StreamId stream) {
    uint64_t grow = size_to_grow(size);
    while (grow >= size) {
      if (grow_by(grow, stream)) return true;
      grow = grow / 2 / kAlignment * kAlignment;  // try_to_expand halves the attempt
    }
    return false;
  }

  uint64_t size_to_grow(uint64_t size) const {
    if (config_.maximum_pool_size) {
      const uint64_t max = *config_.maximum_pool_size;
      const uint64_t remaining = max > pool_size_ ? align(max - pool_size_) : 0;
      return size <= remaining ? std::max(size, remaining / 2) : 0;
    }
    return std::max(size, pool_size_);
  }

  // A new upstream block joins the free list of the stream that needed it.
  bool grow_by(uint64_t bytes, StreamId stream) {
    const auto address = device_.malloc(bytes);
    if (!address) return false;
    pool_size_ += bytes;
    ranges_.add_chain(*address, *address + bytes, stream);
    return true;
  }

  // The block joins the list of the stream that frees it, merged with its neighbours free on that
  // stream inside its upstream block.
  bool do_free(uint64_t address, StreamId stream) override {
    const auto node = live_.extract(address);
    if (node.empty()) return false;
    ranges_.give_back(node.mapped(), stream);
    return true;
  }

  Device& device_;
  RmmPoolConfig config_;
  uint64_t pool_size_ = 0;
  suballoc::BinnedRanges ranges_;  // every upstream block, one chain each
  absl::flat_hash_map<uint64_t, Range*> live_;  // live blocks by address
};

}  // namespace

RmmPoolConfig rmm_pool_config(const detail::PolicyOptions& options) {
  RmmPoolConfig config;
  const detail::PolicyOption* initial = nullptr;  // the entry that set initial_pool_size
  for (const auto& entry : options.entries()) {
    if (entry.key == "initial_pool_size") {
      config.initial_pool_size = options.to_bytes(entry);
      initial = &entry;
    }
    if (entry.key == "maximum_pool_size") {
      config.maximum_pool_size = options.to_bytes(entry);
      // Less than one aligned block holds no allocation at all.
      if (*config.maximum_pool_size < kAlignment)
        options.fail(entry, "must be at least " + std::to_string(kAlignment) + " bytes (rmm's allocation alignment)");
    }
  }
  if (config.maximum_pool_size && config.initial_pool_size > *config.maximum_pool_size)
    options.fail(*initial, "larger than maximum_pool_size");
  return config;
}

std::unique_ptr<Policy> make_rmm_pool(Device& device, const RmmPoolConfig& config) {
  return std::make_unique<RmmPoolPolicy>(device, config);
}

namespace {

std::unique_ptr<Policy> make_rmm_pool_from_spec(std::string_view text, Device& device) {
  const detail::PolicyOptions options("rmm_pool", text, {"initial_pool_size", "maximum_pool_size"});
  return make_rmm_pool(device, rmm_pool_config(options));
}

}  // namespace

MEMREPLAY_REGISTER_POLICY(rmm_pool, .name = "rmm_pool",
                          .description =
                              "RAPIDS RMM's pool_memory_resource: coalescing best fit, per-stream free "
                              "lists, the pool doubles",
                          .options_help = "initial_pool_size:BYTES (default 0), maximum_pool_size:BYTES (default none)",
                          .factory = make_rmm_pool_from_spec,
                          .contract_option_sets = {"", "initial_pool_size:64MiB,maximum_pool_size:512MiB"},
                          .releases_on_empty_cache = false);

}  // namespace memreplay
