// buddy: a binary buddy allocator (Knowlton 1965; Knuth, TAOCP vol. 1 §2.5) over fixed regions.
//
// Modelled:
//   - the device memory comes in regions of region_size bytes (a power of two, one cudaMalloc
//     each); a request takes a block of the smallest power of two >= max(request, min_block);
//   - a free block of the smallest order that holds the request is taken (lowest address among
//     equals, over every region); larger blocks are halved until the order is reached, each
//     upper half going to its order's free list;
//   - a freed block merges with its buddy (address XOR size, relative to the region) while the
//     buddy is free, up to the whole region;
//   - a request larger than region_size gets a region of its own, of the next power of two;
//   - a new region is taken when no free block is large enough; empty_cache gives back the
//     regions that are wholly free.
// Options: region_size:BYTES (power of two, default 256MiB), min_block:BYTES (power of two,
// default 512).
#include <bit>
#include <map>
#include <memory>
#include <vector>

#include <absl/container/btree_set.h>
#include <absl/container/flat_hash_map.h>

#include "policies/detail/policy_options.h"
#include "policies/registry.h"

namespace memreplay {
namespace {

struct BuddyConfig {
  uint64_t region_size = 256ull << 20;
  uint64_t min_block = 512;
};

class BuddyPolicy final : public Policy {
 public:
  BuddyPolicy(Device& device, const BuddyConfig& config) : device_(device), config_(config), free_(64) {}

 private:
  static unsigned order_of(uint64_t size) { return static_cast<unsigned>(std::countr_zero(size)); }

  std::optional<Block> do_allocate(uint64_t bytes, StreamId) override {
    if (bytes > (1ull << 62)) return std::nullopt;
    const uint64_t size = std::bit_ceil(std::max(bytes, config_.min_block));
    const unsigned order = order_of(size);
    unsigned found = order;
    while (found < free_.size() && free_[found].empty()) ++found;
    if (found == free_.size()) {
      if (!add_region(std::max(size, config_.region_size))) return std::nullopt;
      found = order_of(std::max(size, config_.region_size));
    }
    const uint64_t address = *free_[found].begin();
    free_[found].erase(free_[found].begin());
    for (unsigned split = found; split > order; --split)  // keep the lower half, free the upper
      free_[split - 1].insert(address + (1ull << (split - 1)));
    live_.emplace(address, order);
    return Block{address, size};
  }

  bool add_region(uint64_t size) {
    const auto address = device_.malloc(size);
    if (!address) return false;
    regions_.emplace(*address, size);
    free_[order_of(size)].insert(*address);
    return true;
  }

  bool do_free(uint64_t address, StreamId) override {
    const auto node = live_.extract(address);
    if (node.empty()) return false;
    unsigned order = node.mapped();
    const auto region = std::prev(regions_.upper_bound(address));
    const uint64_t base = region->first;
    const unsigned top = order_of(region->second);
    uint64_t block = address;
    while (order < top) {
      const uint64_t buddy = base + ((block - base) ^ (1ull << order));
      const auto it = free_[order].find(buddy);
      if (it == free_[order].end()) break;
      free_[order].erase(it);
      block = std::min(block, buddy);
      ++order;
    }
    free_[order].insert(block);
    return true;
  }

  void do_empty_cache() override {
    for (auto it = regions_.begin(); it != regions_.end();) {
      auto& list = free_[order_of(it->second)];
      if (const auto whole = list.find(it->first); whole != list.end()) {
        list.erase(whole);
        free_held(device_, it->first);
        it = regions_.erase(it);
      } else {
        ++it;
      }
    }
  }

  Device& device_;
  BuddyConfig config_;
  std::vector<absl::btree_set<uint64_t>> free_;  // per order: free block addresses
  std::map<uint64_t, uint64_t> regions_;  // region start -> size
  absl::flat_hash_map<uint64_t, unsigned> live_;  // address -> order
};

std::unique_ptr<Policy> make_buddy(std::string_view text, Device& device) {
  const detail::PolicyOptions options("buddy", text, {"region_size", "min_block"});
  BuddyConfig config;
  for (const auto& entry : options.entries()) {
    const uint64_t value = options.to_bytes(entry);
    if (!std::has_single_bit(value) || value < 256 || value > (1ull << 40))
      options.fail(entry, "must be a power of two from 256 bytes to 1 TiB");
    (entry.key == "region_size" ? config.region_size : config.min_block) = value;
  }
  if (config.min_block > config.region_size) throw PolicySpecError("buddy option 'min_block': larger than region_size");
  return std::make_unique<BuddyPolicy>(device, config);
}

}  // namespace

MEMREPLAY_REGISTER_POLICY(
    buddy, .name = "buddy", .description = "binary buddy allocator over fixed power-of-two regions",
    .options_help = "region_size:BYTES (power of two, default 256MiB), min_block:BYTES (default 512)",
    .factory = make_buddy, .contract_option_sets = {"", "region_size:64MiB,min_block:4KiB"});

}  // namespace memreplay
