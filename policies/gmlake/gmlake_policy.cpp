// gmlake: GMLake's virtual memory stitching (Guo et al., "GMLake: Efficient and Transparent GPU
// Memory Defragmentation for Large-scale DNN Training with Virtual Memory Stitching", ASPLOS'24;
// code: intelligent-machine-learning/glake, GMLake/).
//
// Modelled:
//   - requests of at most 1 MiB go to PyTorch's caching allocator (the `pytorch` model's small
//     pool), as GMLake keeps PyTorch's path for small blocks;
//   - larger requests round up to 2 MiB chunks (the VMM granularity). Every block lives in a
//     virtual range of its own, backed by mapped chunks:
//       1. best fit: the smallest free block that holds the request is reused; a larger one is
//          split, the rest staying free in the same range (coalescing with free neighbours there);
//       2. stitch: when no free block is large enough but the free blocks together are, the
//          largest are taken until they hold the request and their physical memory is stitched
//          into one new virtual range;
//       3. otherwise all free blocks are stitched and the rest is newly allocated.
//   - empty_cache unmaps every free chunk and gives back the empty ranges.
// Reserved memory is GMLake's: stitching never allocates physical memory that free chunks could
// provide. Device calls are not: our Device creates pages with each map(), so a stitch is counted
// as an unmap of each free block and one map of the new range, where GMLake maps the existing
// physical handles again (cuMemMap without cuMemCreate). Left out: GMLake's stitched-block cache
// (sBlocks kept for reuse), its fragmentation threshold for stitching, and per-stream pools (one
// pool for every stream, as in the paper's single-stream training).
#include <memory>
#include <tuple>
#include <vector>

#include <absl/container/btree_map.h>
#include <absl/container/btree_set.h>

#include "policies/detail/coalesce.h"
#include "policies/detail/policy_options.h"
#include "policies/registry.h"

namespace memreplay {
namespace {

constexpr uint64_t kSmallSize = 1ull << 20;

class GmlakePolicy final : public Policy {
 public:
  explicit GmlakePolicy(Device& device)
      : device_(device), chunk_(device.granularity()), small_(PolicyRegistry::instance().create("pytorch", device)) {}

 private:
  struct Range {
    uint64_t size;
    uint64_t mapped = 0;  // bytes of chunks mapped in it
  };
  struct Piece {
    uint64_t size;
    uint64_t range;  // start of its virtual range
    bool free;
    uint64_t range_order;  // the range's creation number: ties broken by it, not by addresses
  };
  // Free pieces ordered by size, then by their range's creation, then by address within it: the
  // same choices on every device (a real driver hands out and reuses reservations in its own
  // address order; the simulator's only rise), as in the paper's sBlock pool, where a block's
  // virtual address does not order it.
  using FreeKey = std::tuple<uint64_t, uint64_t, uint64_t>;  // (size, range_order, address)
  static FreeKey key(uint64_t address, const Piece& piece) { return {piece.size, piece.range_order, address}; }

  std::optional<Block> do_allocate(uint64_t bytes, StreamId stream) override {
    if (bytes <= kSmallSize) return small_->allocate(bytes, stream);
    if (bytes > device_.total_memory()) return std::nullopt;
    const uint64_t size = (bytes + chunk_ - 1) / chunk_ * chunk_;
    std::optional<uint64_t> address;
    if (const auto fit = free_.lower_bound({size, 0, 0}); fit != free_.end())
      address = reuse(std::get<2>(*fit), size);
    else
      address = stitch(size);
    if (!address) return std::nullopt;
    return Block{*address, size};
  }

  // Step 1: take the free piece at `address`, split off what the request does not need.
  uint64_t reuse(uint64_t address, uint64_t size) {
    Piece piece = pieces_.at(address);
    free_.erase(key(address, piece));
    if (piece.size > size) {
      const Piece rest{piece.size - size, piece.range, true, piece.range_order};
      pieces_.emplace(address + size, rest);
      free_.insert(key(address + size, rest));
    }
    pieces_.insert_or_assign(address,
                             Piece{size, piece.range, false, piece.range_order});  // (btree: no references kept)
    return address;
  }

  // Steps 2 and 3: the physical memory of free pieces, largest first, into one new range.
  std::optional<uint64_t> stitch(uint64_t size) {
    uint64_t gathered = 0;
    std::vector<uint64_t> taken;  // addresses
    for (auto it = free_.rbegin(); it != free_.rend() && gathered < size; ++it) {
      taken.push_back(std::get<2>(*it));
      gathered += std::get<0>(*it);
    }
    const uint64_t fresh = gathered >= size ? 0 : size - gathered;
    if (const auto cap = device_.capacity(); cap && device_.counters().reserved_bytes + fresh > *cap)
      return std::nullopt;
    const auto range = device_.reserve_address(size);
    if (!range) return std::nullopt;
    for (const uint64_t address : taken) unmap_piece(address);
    if (!device_.map(*range, size)) {
      device_.release_address(*range, size);
      return std::nullopt;
    }
    ranges_.emplace(*range, Range{size, size});
    large_span_ = {std::min(large_span_.first, *range), std::max(large_span_.second, *range + size)};
    pieces_.emplace(*range, Piece{size, *range, false, ranges_created_++});
    return *range;
  }

  void unmap_piece(uint64_t address) {
    const auto it = pieces_.find(address);
    const Piece piece = it->second;
    free_.erase(key(address, piece));
    pieces_.erase(it);
    device_.unmap(address, piece.size);
    Range& range = ranges_.at(piece.range);
    range.mapped -= piece.size;
    if (range.mapped == 0) {
      device_.release_address(piece.range, range.size);
      ranges_.erase(piece.range);
    }
  }

  bool do_free(uint64_t address, StreamId stream) override {
    // Not a large piece: small_'s, whose own contract check names an address neither handed out.
    // Outside every virtual range made so far it cannot be one, and the btree need not be asked.
    const bool maybe_large = large_span_.first <= address && address < large_span_.second;
    const auto it = maybe_large ? pieces_.find(address) : pieces_.end();
    if (it == pieces_.end()) {
      small_->free(address, stream);
      return true;
    }
    if (it->second.free) return false;
    // Coalesce with free neighbours of the same range (its chunks are mapped contiguously).
    suballoc::free_and_coalesce(
        pieces_, free_, it,
        [](uint64_t left_start, const Piece& left, uint64_t right_start, const Piece& right) {
          return left.range == right.range && left_start + left.size == right_start;
        },
        &GmlakePolicy::key);
    return true;
  }

  void do_empty_cache() override {
    std::vector<uint64_t> idle;
    for (const auto& [size, order, address] : free_) idle.push_back(address);
    for (const uint64_t address : idle) unmap_piece(address);
    small_->empty_cache();
  }

  PolicyStats do_stats() const override {
    PolicyStats stats = small_->stats();
    stats.ooms = 0;  // the base counts this policy's own
    return stats;
  }

  Device& device_;
  uint64_t chunk_;
  std::unique_ptr<Policy> small_;  // PyTorch's allocator, for <= 1 MiB
  absl::btree_map<uint64_t, Range> ranges_;  // virtual ranges: start -> range
  absl::btree_map<uint64_t, Piece> pieces_;  // every large block, live or free
  absl::btree_set<FreeKey> free_;  // free pieces
  uint64_t ranges_created_ = 0;
  std::pair<uint64_t, uint64_t> large_span_{UINT64_MAX, 0};  // [lowest start, highest end) of the ranges made
};

std::unique_ptr<Policy> make_gmlake(std::string_view options, Device& device) {
  detail::PolicyOptions("gmlake", options, {});
  return std::make_unique<GmlakePolicy>(device);
}

}  // namespace

MEMREPLAY_REGISTER_POLICY(gmlake, .name = "gmlake",
                          .description =
                              "GMLake (ASPLOS'24): free physical chunks stitched into a new virtual "
                              "range instead of a new segment",
                          .options_help = "(no options)", .factory = make_gmlake);

}  // namespace memreplay
