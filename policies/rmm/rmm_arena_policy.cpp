// rmm_arena: RAPIDS RMM's arena_memory_resource (cpp/include/rmm/mr/detail/arena.hpp), as
// ../shared/docs/peers.md §1.3 describes it: "emphasizes fragmentation avoidance and scalable
// concurrency".
//
// Modelled:
//   - one upstream allocation of arena_size at the first request (RMM's default: half the free
//     memory; here the --capacity when one is set, so that `fit` can search it), never given back:
//     the global arena;
//   - per-stream arenas hold superblocks taken from the global arena: multiples of 1 MiB, at
//     least 1 MiB, the smallest that holds the request; the global arena hands them out first fit
//     by address and coalesces them when they come back;
//   - inside a stream's superblocks, blocks (256-byte aligned) are carved first fit by address
//     and coalesce on free within their superblock; a superblock that becomes wholly free goes
//     back to the global arena;
//   - a request no superblock can hold takes a new one; none left in the global arena: OOM.
// Left out: the per-thread arenas of the default stream (one arena per stream here), jemalloc's
// size classes inside superblocks, the cap on free superblocks per arena and dump_log_on_failure.
// Options: arena_size:BYTES.
#include <map>
#include <memory>

#include <absl/container/btree_map.h>
#include <absl/container/flat_hash_map.h>

#include "policies/detail/policy_options.h"
#include "policies/registry.h"

namespace memreplay {
namespace {

constexpr uint64_t kAlignment = 256;
constexpr uint64_t kSuperblock = 1ull << 20;

uint64_t round_up(uint64_t value, uint64_t to) { return (value + to - 1) / to * to; }

// Free ranges, first fit by address, coalescing neighbours for which `joinable` holds.
class FirstFitList {
 public:
  std::optional<uint64_t> take(uint64_t bytes) {
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second - it->first < bytes) continue;
      const uint64_t address = it->first;
      const uint64_t end = it->second;
      free_.erase(it);
      if (address + bytes < end) free_.emplace(address + bytes, end);
      return address;
    }
    return std::nullopt;
  }
  template <class Joinable>
  void give(uint64_t start, uint64_t end, Joinable joinable) {
    if (auto next = free_.find(end); next != free_.end() && joinable(start, next->first)) {
      end = next->second;
      free_.erase(next);
    }
    if (auto previous = free_.lower_bound(start); previous != free_.begin()) {
      --previous;
      if (previous->second == start && joinable(previous->first, start)) {
        start = previous->first;
        free_.erase(previous);
      }
    }
    free_.emplace(start, end);
  }
  void remove(uint64_t start) { free_.erase(start); }
  bool holds(uint64_t start, uint64_t end) const {
    const auto it = free_.find(start);
    return it != free_.end() && it->second == end;
  }

 private:
  absl::btree_map<uint64_t, uint64_t> free_;  // start -> end
};

class RmmArenaPolicy final : public Policy {
 public:
  RmmArenaPolicy(Device& device, std::optional<uint64_t> arena_size)
      : device_(device),
        arena_size_(round_up(arena_size.value_or(device.capacity().value_or(device.total_memory() / 2)), kSuperblock)) {}

 private:
  struct Superblock {
    uint64_t end;
    StreamId stream;
    uint64_t live = 0;  // live blocks in it
  };
  struct Live {
    uint64_t size;
    uint64_t superblock;
  };

  std::optional<Block> do_allocate(uint64_t bytes, StreamId stream) override {
    if (!global_start_) {
      global_start_ = device_.malloc(arena_size_);
      if (!global_start_) return std::nullopt;
      global_.give(*global_start_, *global_start_ + arena_size_, [](uint64_t, uint64_t) { return true; });
    }
    if (bytes > arena_size_) return std::nullopt;
    const uint64_t size = round_up(bytes, kAlignment);
    FirstFitList& arena = arenas_[stream];
    auto address = arena.take(size);
    if (!address) {
      const uint64_t superblock_size = round_up(std::max(size, kSuperblock), kSuperblock);
      const auto superblock = global_.take(superblock_size);
      if (!superblock) return std::nullopt;
      superblocks_.emplace(*superblock, Superblock{*superblock + superblock_size, stream});
      arena.give(*superblock, *superblock + superblock_size, [](uint64_t, uint64_t) { return false; });
      address = arena.take(size);
    }
    const auto superblock = std::prev(superblocks_.upper_bound(*address));
    ++superblock->second.live;
    live_.emplace(*address, Live{size, superblock->first});
    return Block{*address, size};
  }

  bool do_free(uint64_t address, StreamId) override {
    const auto node = live_.extract(address);
    if (node.empty()) return false;
    const auto superblock = superblocks_.find(node.mapped().superblock);
    Superblock& sb = superblock->second;
    FirstFitList& arena = arenas_[sb.stream];
    const uint64_t sb_start = superblock->first;
    // Coalesce only inside the superblock (neighbouring superblocks of a stream stay apart).
    arena.give(address, address + node.mapped().size,
               [&](uint64_t a, uint64_t b) { return a >= sb_start && b < sb.end; });
    if (--sb.live == 0 && arena.holds(sb_start, sb.end)) {  // wholly free: back to the global arena
      arena.remove(sb_start);
      global_.give(sb_start, sb.end, [](uint64_t, uint64_t) { return true; });
      superblocks_.erase(superblock);
    }
    return true;
  }

  Device& device_;
  uint64_t arena_size_;
  std::optional<uint64_t> global_start_;
  FirstFitList global_;                           // free superblock space
  std::map<StreamId, FirstFitList> arenas_;       // per stream: free space in its superblocks
  absl::btree_map<uint64_t, Superblock> superblocks_;  // start -> superblock
  absl::flat_hash_map<uint64_t, Live> live_;
};

// The arena_size option, when given: at least one superblock.
std::optional<uint64_t> arena_size_option(std::string_view text) {
  const detail::PolicyOptions options("rmm_arena", text, {"arena_size"});
  std::optional<uint64_t> arena_size;
  for (const auto& entry : options.entries())
    if ((arena_size = options.to_bytes(entry)) < kSuperblock) options.fail(entry, "must be at least 1MiB");
  return arena_size;
}

}  // namespace

MEMREPLAY_REGISTER_POLICY(rmm_arena, .name = "rmm_arena",
                          .description = "RAPIDS RMM's arena_memory_resource: one global arena, per-stream arenas of "
                                         ">= 1 MiB superblocks, first fit",
                          .options_help = "arena_size:BYTES (default the capacity, else half the device's memory)",
                          .factory = [](std::string_view text, Device& device) -> std::unique_ptr<Policy> {
                            return std::make_unique<RmmArenaPolicy>(device, arena_size_option(text));
                          },
                          .contract_option_sets = {"", "arena_size:256MiB"},
                          .releases_on_empty_cache = false);

}  // namespace memreplay
