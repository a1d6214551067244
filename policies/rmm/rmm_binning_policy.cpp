// rmm_binning: RAPIDS RMM's binning_memory_resource as its replay benchmark builds it
// (cpp/benchmarks/replay/replay.cpp, `binning`): fixed_size_memory_resource bins for the powers
// of two 2^18..2^22 (256 KiB..4 MiB) over a pool_memory_resource, and the pool for everything
// larger (docs/policies.md).
//
// Modelled:
//   - a request of at most 4 MiB takes one block of the smallest bin that holds it (a 512-byte
//     request takes a 256 KiB block: the bins trade memory for O(1) allocation);
//   - a bin that runs out takes blocks_to_preallocate (128) blocks at once from the pool and
//     never gives them back; its free blocks are reused last-in first-out;
//   - larger requests go to the pool (the `rmm_pool` model of rmm_pool_policy.h, with this spec's
//     pool options).
// Left out: the bins' per-stream free lists (one list per bin here: a bin block is reused on any
// stream, where RMM would wait on the free's event).
// Options: min_bin:BYTES and max_bin:BYTES (powers of two up to 1TiB, default 256KiB and 4MiB),
// blocks_to_preallocate:N (default 128), and the pool's initial_pool_size, maximum_pool_size.
#include <memory>
#include <vector>

#include <absl/container/flat_hash_map.h>

#include "policies/detail/policy_options.h"
#include "policies/registry.h"
#include "policies/rmm/rmm_pool_policy.h"

namespace memreplay {
namespace {

struct BinningConfig {
  uint64_t min_bin = 256 << 10;
  uint64_t max_bin = 4 << 20;
  uint64_t blocks_to_preallocate = 128;
  RmmPoolConfig pool;
};

class RmmBinningPolicy final : public Policy {
 public:
  RmmBinningPolicy(Device& device, const BinningConfig& config)
      : config_(config), pool_(make_rmm_pool(device, config.pool)) {
    for (uint64_t size = config.min_bin; size <= config.max_bin; size *= 2) bins_.push_back(Bin{size, {}, {}});
  }

 private:
  struct Bin {
    uint64_t block_size;
    std::vector<uint64_t> free;  // free blocks, reused last in, first out
    std::vector<uint64_t> batches;  // pool allocations backing the bin
  };

  std::optional<Block> do_allocate(uint64_t bytes, StreamId stream) override {
    if (bytes > config_.max_bin) {
      auto block = pool_->allocate(bytes, stream);
      if (block) live_.emplace(block->address, kFromPool);
      return block;
    }
    size_t index = 0;
    while (bins_[index].block_size < bytes) ++index;
    Bin& bin = bins_[index];
    if (bin.free.empty()) {
      const auto batch = pool_->allocate(bin.block_size * config_.blocks_to_preallocate, stream);
      if (!batch) return std::nullopt;
      bin.batches.push_back(batch->address);
      for (uint64_t i = config_.blocks_to_preallocate; i-- > 0;)
        bin.free.push_back(batch->address + i * bin.block_size);
    }
    const uint64_t address = bin.free.back();
    bin.free.pop_back();
    live_.emplace(address, index);
    return Block{address, bin.block_size};
  }

  bool do_free(uint64_t address, StreamId stream) override {
    const auto node = live_.extract(address);
    if (node.empty()) return false;
    if (node.mapped() == kFromPool)
      pool_->free(address, stream);
    else
      bins_[node.mapped()].free.push_back(address);
    return true;
  }

  static constexpr size_t kFromPool = ~size_t{0};
  BinningConfig config_;
  std::unique_ptr<Policy> pool_;
  std::vector<Bin> bins_;
  absl::flat_hash_map<uint64_t, size_t> live_;  // address -> bin index, or kFromPool
};

bool is_power_of_two(uint64_t value) { return value != 0 && (value & (value - 1)) == 0; }

std::unique_ptr<Policy> make_rmm_binning(std::string_view text, Device& device) {
  const detail::PolicyOptions options(
      "rmm_binning", text, {"min_bin", "max_bin", "blocks_to_preallocate", "initial_pool_size", "maximum_pool_size"});
  BinningConfig config;
  for (const auto& entry : options.entries()) {
    if (entry.key == "min_bin" || entry.key == "max_bin") {
      const uint64_t size = options.to_bytes(entry);
      // Bounded above so that the bins (one per power of two) and a bin's batch of
      // blocks_to_preallocate blocks stay countable: 2^63 made the bin loop wrap (fuzz/).
      if (!is_power_of_two(size) || size < 256 || size > (uint64_t{1} << 40))
        options.fail(entry, "must be a power of two from 256 bytes to 1 TiB");
      (entry.key == "min_bin" ? config.min_bin : config.max_bin) = size;
    } else if (entry.key == "blocks_to_preallocate") {
      config.blocks_to_preallocate = options.to_unsigned(entry);
      if (config.blocks_to_preallocate == 0 || config.blocks_to_preallocate > 65536)
        options.fail(entry, "must be 1..65536");
    }
  }
  if (config.min_bin > config.max_bin) throw PolicySpecError("rmm_binning option 'min_bin': larger than max_bin");
  config.pool = rmm_pool_config(options);
  return std::make_unique<RmmBinningPolicy>(device, config);
}

}  // namespace

MEMREPLAY_REGISTER_POLICY(rmm_binning, .name = "rmm_binning",
                          .description =
                              "RAPIDS RMM's binning_memory_resource: fixed-size bins 256 KiB..4 MiB over "
                              "the pool, the pool above",
                          .options_help =
                              "min_bin:BYTES, max_bin:BYTES (powers of two up to 1TiB; default 256KiB, 4MiB), "
                              "blocks_to_preallocate:N (default 128), initial_pool_size, maximum_pool_size",
                          .factory = make_rmm_binning,
                          .contract_option_sets = {"", "min_bin:4KiB,max_bin:64KiB,blocks_to_preallocate:16"},
                          .releases_on_empty_cache = false);

}  // namespace memreplay
