// rmm_arena: RAPIDS RMM's arena_memory_resource (cpp/include/rmm/mr/detail/arena.hpp), as
// RMM's documentation describes it: "emphasizes fragmentation avoidance and scalable
// concurrency".
//
// Modelled:
//   - one upstream allocation of arena_size at the first request (RMM's default: half the free
//     memory; here the --capacity when one is set, so that `fit` can search it; either rounded
//     down to whole superblocks), never given back: the global arena;
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
#include <algorithm>
#include <map>
#include <memory>

#include <absl/container/flat_hash_map.h>

#include "policies/detail/binned_ranges.h"
#include "policies/detail/policy_options.h"
#include "policies/registry.h"

namespace memreplay {
namespace {

constexpr uint64_t kAlignment = 256;
constexpr uint64_t kSuperblock = 1ull << 20;

uint64_t round_up(uint64_t value, uint64_t to) { return (value + to - 1) / to * to; }

// The arena's size: the option as given (whole superblocks), else what the device may hold (the
// cap, else half its memory, as RMM's default of half the free memory) in whole superblocks, never
// more: rounding up would ask for more than the cap allows and fail at the first request.
uint64_t arena_size_for(std::optional<uint64_t> option, const Device& device) {
  if (option) return round_up(*option, kSuperblock);
  const uint64_t room = device.capacity().value_or(device.total_memory() / 2);
  return std::max(kSuperblock, room / kSuperblock * kSuperblock);
}

// The global arena is one chain of BinnedRanges (its live ranges are the superblocks handed out),
// a stream's arena one chain per superblock: blocks coalesce inside their superblock only.
class RmmArenaPolicy final : public Policy {
 public:
  RmmArenaPolicy(Device& device, std::optional<uint64_t> arena_size)
      : device_(device), arena_size_(arena_size_for(arena_size, device)) {}

 private:
  using Range = suballoc::Range;
  using Ranges = suballoc::BinnedRanges;
  struct Live {
    Range* block;
    Ranges* arena;  // the stream arena whose superblock holds it (std::map nodes do not move)
  };

  // The stream's arena; one stream at a time in most traces, so the last one is kept at hand.
  Ranges& arena_of(StreamId stream) {
    if (last_arena_ == nullptr || stream != last_stream_) {
      last_arena_ = &arenas_.try_emplace(stream, Ranges::Order::first_fit).first->second;
      last_stream_ = stream;
    }
    return *last_arena_;
  }

  std::optional<Block> do_allocate(uint64_t bytes, StreamId stream) override {
    if (!global_start_) {
      global_start_ = device_.malloc(arena_size_);
      if (!global_start_) return std::nullopt;
      global_.add_chain(*global_start_, *global_start_ + arena_size_);
    }
    if (bytes > arena_size_) return std::nullopt;
    const uint64_t size = round_up(bytes, kAlignment);
    Ranges& arena = arena_of(stream);
    Range* fit = arena.first_fit(size);
    if (fit == nullptr) {
      const uint64_t superblock_size = round_up(std::max(size, kSuperblock), kSuperblock);
      Range* space = global_.first_fit(superblock_size);
      if (space == nullptr) return std::nullopt;
      Range* superblock = global_.carve(space, space->start, superblock_size);
      superblocks_.emplace(superblock->start, superblock);
      fit = arena.add_chain(superblock->start, superblock->end);
    }
    Range* block = arena.carve(fit, fit->start, size);
    live_.emplace(block->start, Live{block, &arena});
    return Block{block->start, size};
  }

  bool do_free(uint64_t address, StreamId) override {
    const auto node = live_.extract(address);
    if (node.empty()) return false;
    Ranges& arena = *node.mapped().arena;
    Range* merged = arena.give_back(node.mapped().block);
    if (merged->left == nullptr && merged->right == nullptr) {  // wholly free: back to the global arena
      const auto superblock = superblocks_.find(merged->start);
      arena.remove_chain(merged);
      global_.give_back(superblock->second);
      superblocks_.erase(superblock);
    }
    return true;
  }

  Device& device_;
  uint64_t arena_size_;
  std::optional<uint64_t> global_start_;
  Ranges global_{Ranges::Order::first_fit};  // superblock space
  std::map<StreamId, Ranges> arenas_;  // per stream: its superblocks
  StreamId last_stream_ = 0;
  Ranges* last_arena_ = nullptr;
  absl::flat_hash_map<uint64_t, Range*> superblocks_;  // start -> its range in the global arena
  absl::flat_hash_map<uint64_t, Live> live_;  // live blocks by address
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

MEMREPLAY_REGISTER_POLICY(
    rmm_arena, .name = "rmm_arena",
    .description =
        "RAPIDS RMM's arena_memory_resource: one global arena, per-stream arenas of "
        ">= 1 MiB superblocks, first fit",
    .options_help = "arena_size:BYTES (default the capacity, else half the device's memory)",
    .factory = [](std::string_view text, Device& device) -> std::unique_ptr<Policy> {
      return std::make_unique<RmmArenaPolicy>(device, arena_size_option(text));
    },
    .contract_option_sets = {"", "arena_size:256MiB"}, .releases_on_empty_cache = false,
    .reserves_up_front = "its arena: arena_size, else the capacity, else half the device's memory");

}  // namespace memreplay
