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
//      goes where it needs the fewest newly mapped 2 MiB pages, best fit among equal costs. Memory
//      freed on one stream is reused on another (a live allocator makes the allocating stream wait
//      on an event recorded at the free, as RMM's stream-ordered pool does).
//   2. Physical pages are mapped only under blocks, and cached when their blocks are freed.
//   3. Reserved memory never rises above its own high-water mark while free pages are cached: a
//      request that needs new pages and would raise the mark first unmaps whole free pages
//      (largest runs first, fewest calls), so the cache is moved to where it is needed.
//   4. Under a capacity (set_per_process_memory_fraction), the same, against the cap; the request
//      fails only when the cap minus what live blocks pin cannot hold it.
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
// Reserved memory may run 1/200 (0.5%) above the highest live requested bytes seen so far before
// cached pages are moved; a move frees another 0.5%, so that the next few growths need none.
constexpr uint64_t kSlackDivisor = 200;

class MemreplayPolicy final : public Policy {
 public:
  explicit MemreplayPolicy(Device& device)
      : device_(device), arena_(device, 4 * device.total_memory()) {}

 private:
  std::optional<Block> do_allocate(uint64_t bytes, StreamId) override {
    const uint64_t size = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    const auto placement = arena_.place(size, false);
    if (!placement) return std::nullopt;
    live_requested_ += bytes;
    requested_high_water_ = std::max(requested_high_water_, live_requested_);
    if (placement->new_bytes > 0 && !make_room(*placement, size)) {
      live_requested_ -= bytes;
      return std::nullopt;
    }
    // Grow in steps of 1/64 of the high-water mark (at least a page, at most 64 MiB): fewer
    // calls while the job warms up, at most ~1.6% mapped ahead of need.
    const uint64_t step = std::clamp<uint64_t>(high_water_ / 64, 0, 64ull << 20);
    const uint64_t extend = placement->new_bytes > 0 && placement->new_bytes < step ? step - placement->new_bytes : 0;
    if (!arena_.take(placement->address, size, fits_cap(placement->new_bytes + extend) ? extend : 0)) {
      arena_.reclaim(UINT64_MAX, placement->address, size);
      if (!arena_.take(placement->address, size)) {
        live_requested_ -= bytes;
        return std::nullopt;
      }
    }
    high_water_ = std::max(high_water_, arena_.mapped_bytes());
    live_.emplace(placement->address, LiveBlock{size, bytes});
    return Block{placement->address, size};
  }

  // Rules 3 and 4: unmap cached pages so that mapping the new ones keeps reserved memory at its
  // high-water mark and under the cap. False when the cap cannot be kept.
  bool make_room(const detail::VmmArena::Placement& placement, uint64_t size) {
    const uint64_t after = arena_.mapped_bytes() + placement.new_bytes;
    uint64_t limit = requested_high_water_ + requested_high_water_ / kSlackDivisor;
    if (const auto cap = device_.capacity()) limit = std::min(limit, *cap);
    if (after > limit) arena_.reclaim(after - limit + requested_high_water_ / kSlackDivisor, placement.address, size);
    if (const auto cap = device_.capacity())
      return arena_.mapped_bytes() + placement.new_bytes <= *cap;
    return true;
  }

  bool fits_cap(uint64_t new_bytes) const {
    const auto cap = device_.capacity();
    return !cap || arena_.mapped_bytes() + new_bytes <= *cap;
  }

  bool do_free(uint64_t address, StreamId) override {
    const auto node = live_.extract(address);
    if (node.empty()) return false;
    arena_.give_back(address, node.mapped().size);
    live_requested_ -= node.mapped().requested;
    return true;
  }

  void do_empty_cache() override { arena_.release_all(); }

  Device& device_;
  detail::VmmArena arena_;
  struct LiveBlock {
    uint64_t size;       // rounded
    uint64_t requested;  // as asked
  };
  absl::flat_hash_map<uint64_t, LiveBlock> live_;
  uint64_t live_requested_ = 0;
  uint64_t requested_high_water_ = 0;
  uint64_t high_water_ = 0;                      // the most this policy has had mapped
};

std::unique_ptr<Policy> make_memreplay(std::string_view options, Device& device) {
  detail::PolicyOptions("memreplay", options, {});  // no knobs to tune
  return std::make_unique<MemreplayPolicy>(device);
}

}  // namespace

MEMREPLAY_REGISTER_POLICY(memreplay, .name = "memreplay",
                          .description = "ours: one VMM range for all streams, pages mapped under blocks, "
                                         "cached pages moved instead of raising reserved memory",
                          .options_help = "(no options)", .factory = make_memreplay);

}  // namespace memreplay
