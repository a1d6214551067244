// memreplay: our own policy, designed from the shared traces (README, "The memreplay policy").
//
// What the traces show: the peak is a few hundred live blocks, most of the bytes in blocks of
// 2-800 MiB whose sizes change from step to step (variable batches, growing KV caches); PyTorch's
// per-stream, per-size-class segments leave freed memory stranded in the wrong segment or stream
// (1.18-1.53 x the requested peak), and expandable segments still strand the holes between live
// blocks (1.01-1.31 x).
//
// Rules:
//   1. One virtual range (VmmArena) for every stream and size: a request rounded up to 512 bytes
//      goes where it needs the fewest newly mapped 2 MiB pages; among places free of cost, a hole
//      it fills exactly, else the smallest free range that still has unmapped pages (what it
//      leaves there is growth room, not a hole stranded between live blocks), else best fit. Where
//      no end of a free range is free of cost, the places where cached runs inside a range start
//      or end are tried too, the shortest such run first (VmmArena::place_among_mapped). Memory
//      freed on one stream is reused on another (a live allocator makes the allocating stream wait
//      on an event recorded at the free, as RMM's stream-ordered pool does).
//   2. Physical pages are mapped only under blocks, and cached when their blocks are freed.
//   3. The budget: mapped pages stay within 1/64 of the highest live requested bytes seen so far
//      (the high-water mark H, learned from the run). A request that needs new pages maps, in the
//      same call, every page up to the budget after it (growth in the largest steps that keep
//      reserved memory under ~1.02 x H if the peak comes now). A request whose pages would pass
//      1/53 above H (the reclaim line, short of 1.02 x) and past the most bytes ever mapped (the
//      reserved peak so far) first unmaps cached free pages down to that line (the smallest run
//      that suffices, whole, else the largest runs: fewest calls), so the cache is moved to where
//      it is needed; below that line it maps without moving (one call, not two). Mapping up to a
//      reserved peak already reached cannot raise it, and a step that repeats one that reached
//      it then maps where the other moved.
//   4. Under a capacity (set_per_process_memory_fraction), the budget is at most the cap, and a
//      request goes where it adds the fewest pages that no live block touches yet (then the fewest
//      new maps, then best fit): under a cap the pinned pages decide what fits, and the partly
//      used pages at the edges of holes are what a calls-first placement wastes (VmmArena::
//      place_tightest). The request fails only when the cap minus what live blocks pin cannot
//      hold it.
// An online allocator cannot grow in steps larger than that margin without risking more than
// 1.02 x at an unknown peak, so the growth from nothing to the peak costs about
// ln(peak / first step) / ln(1 + 1/64) maps; PyTorch's segments grow by whole requests.
// Everything is known to a running allocator: its own live blocks, its mapped pages and its own
// high-water mark. No options: nothing to tune.
#include <algorithm>
#include <memory>

#include <absl/container/flat_hash_map.h>

#include "policies/detail/policy_options.h"
#include "policies/memreplay/vmm_arena.h"
#include "policies/registry.h"

namespace memreplay {
namespace {

constexpr uint64_t kAlignment = 512;
// Pages may be mapped up to 1/64 (1.56%) above the highest live requested bytes seen so far: the
// most a live allocator can map ahead without knowing where the peak is and stay under 1.02 x it
// (the rest of the 2% is for the pages that live blocks share with holes).
constexpr uint64_t kBudgetDivisor = 64;
// Cached pages are moved only past 1/53 (1.89%) above it: every move is an unmap and a map, and
// short of the 2% line a new page costs one call; the last 0.11% is for pages shared with holes.
// Measured on the shared traces, as the rest of the policy is: 1/53 leaves the fewest unmaps of
// 1/50 to 1/56 (the counts move chaotically between neighbouring lines, docs/memreplay-policy.md).
constexpr uint64_t kReclaimDivisor = 53;

class MemreplayPolicy final : public Policy {
 public:
  explicit MemreplayPolicy(Device& device) : device_(device), arena_(device, 4 * device.total_memory()) {
    // Room for the traces' peak of live blocks (a few hundred) a few times over: in a sparse table
    // an erase leaves an empty slot rather than a tombstone, so inserts seldom clean up tombstones.
    live_.reserve(1024);
  }
  static std::unique_ptr<Policy> create(std::string_view options, Device& device) {
    detail::PolicyOptions("memreplay", options, {});  // no knobs to tune
    return std::make_unique<MemreplayPolicy>(device);
  }

 private:
  std::optional<Block> do_allocate(uint64_t bytes, StreamId) override {
    const uint64_t size = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    // Under a capacity the pages that live blocks pin decide what fits, not the calls: place for
    // the smallest footprint there (rule 4).
    auto placement = device_.capacity() ? arena_.place_tightest(size) : arena_.place(size, false);
    if (!placement) return std::nullopt;
    if (!device_.capacity() && placement->new_bytes > 0)
      if (const auto better = arena_.place_among_mapped(size, *placement)) placement = better;
    live_requested_ += bytes;
    requested_high_water_ = std::max(requested_high_water_, live_requested_);
    uint64_t extend = 0;
    if (placement->new_bytes > 0) {
      const uint64_t limit = budget();
      const uint64_t line = reclaim_line(limit);
      if (arena_.mapped_bytes() + placement->new_bytes > line)
        arena_.reclaim(arena_.mapped_bytes() + placement->new_bytes - line, placement->address, size);
      const uint64_t after = arena_.mapped_bytes() + placement->new_bytes;
      if (const auto cap = device_.capacity(); cap && after > *cap) {
        live_requested_ -= bytes;
        return std::nullopt;
      }
      extend = after < limit ? limit - after : 0;  // growth: map up to the budget in this one call
      // The growth maps whole pages: under a cap, only those that fit under it (the device
      // refuses a map past the cap).
      if (device_.capacity()) extend -= extend % arena_.page_bytes();
    }
    suballoc::Range* range = arena_.take(*placement, size, extend);
    if (range == nullptr) {
      arena_.reclaim(UINT64_MAX, placement->address, size);
      range = arena_.take(*placement, size);
      if (range == nullptr) {
        live_requested_ -= bytes;
        return std::nullopt;
      }
    }
    mapped_high_water_ = std::max(mapped_high_water_, arena_.mapped_bytes());
    live_.emplace(placement->address, LiveBlock{range, bytes});
    return Block{placement->address, size};
  }

  // The most this policy maps: a little above the highest live requested bytes so far, and
  // never above the cap.
  uint64_t budget() const {
    uint64_t limit = requested_high_water_ + requested_high_water_ / kBudgetDivisor;
    if (const auto cap = device_.capacity()) limit = std::min(limit, *cap);
    return limit;
  }

  // A placement that needs new pages moves cached ones (unmap here, map there: two calls) only
  // when it would pass 1/53 (1.89%) above the high-water mark and the most bytes ever mapped (the
  // reserved peak so far: pages that live blocks pin can take it past 1/53), and only as many as
  // take it back to that line; below the line it maps its pages in one call and leaves the cache
  // where it is (rule 3): mapping up to a reserved peak already reached does not raise it. Under a
  // capacity the line is the budget, so that what fits under a cap does not change.
  uint64_t reclaim_line(uint64_t limit) const {
    if (device_.capacity()) return limit;
    return std::max({limit, requested_high_water_ + requested_high_water_ / kReclaimDivisor, mapped_high_water_});
  }

  bool do_free(uint64_t address, StreamId) override {
    const auto node = live_.extract(address);
    if (node.empty()) return false;
    arena_.give_back(node.mapped().range);
    live_requested_ -= node.mapped().requested;
    return true;
  }

  void do_empty_cache() override { arena_.release_all(); }

  Device& device_;
  detail::VmmArena arena_;
  struct LiveBlock {
    suballoc::Range* range;  // in the arena: its rounded size
    uint64_t requested;  // as asked
  };
  absl::flat_hash_map<uint64_t, LiveBlock> live_;
  uint64_t live_requested_ = 0;
  uint64_t requested_high_water_ = 0;
  uint64_t mapped_high_water_ = 0;  // the most bytes this policy has had mapped: its reserved peak
};

}  // namespace

MEMREPLAY_REGISTER_POLICY(memreplay, .name = "memreplay",
                          .description =
                              "ours: one VMM range for all streams, pages mapped under blocks up to "
                              "1/64 above the live high-water mark, cached pages moved beyond it",
                          .options_help = "(no options)", .factory = &MemreplayPolicy::create);

}  // namespace memreplay
