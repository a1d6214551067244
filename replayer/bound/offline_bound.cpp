#include "replayer/bound/offline_bound.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <future>

#include <absl/container/flat_hash_map.h>
#include <nlohmann/json.hpp>

#include "base/output_file.h"
#include "proto/input_error.h"
#include "proto/trace_reader.h"
#include "replayer/bound/occupancy_tree.h"

namespace memreplay {
namespace {

uint64_t round_up(uint64_t value, uint64_t to) { return (value + to - 1) / to * to; }

std::string hex(uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

// Greedy by size's order: decreasing size, then longer life first, then allocation order.
std::vector<uint32_t> placement_order(const std::vector<Lifetime>& blocks) {
  struct Key {
    uint64_t size;
    uint64_t life;
    uint32_t index;
  };
  std::vector<Key> keys(blocks.size());
  for (size_t i = 0; i < blocks.size(); ++i)
    keys[i] = Key{blocks[i].size, blocks[i].upper - blocks[i].lower, static_cast<uint32_t>(i)};
  std::sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) {
    if (a.size != b.size) return a.size > b.size;
    if (a.life != b.life) return a.life > b.life;
    return a.index < b.index;
  });
  std::vector<uint32_t> order(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) order[i] = keys[i].index;
  return order;
}

// Lifetimes on a compressed time axis: the moments are the distinct alloc events, and a block is
// alive at those in [lower, upper). Two lifetimes overlap exactly when they share a moment (the
// later one's alloc), so the tree needs half the leaves of the replay's event axis.
struct MomentRanges {
  size_t moments = 0;
  std::vector<std::pair<uint32_t, uint32_t>> ranges;  // per block: [from, to), empty for an empty life
};

MomentRanges moment_ranges(const std::vector<Lifetime>& blocks) {
  std::vector<uint64_t> allocs;
  allocs.reserve(blocks.size());
  for (const Lifetime& b : blocks)
    if (b.lower < b.upper) allocs.push_back(b.lower);
  std::sort(allocs.begin(), allocs.end());
  allocs.erase(std::unique(allocs.begin(), allocs.end()), allocs.end());
  MomentRanges result;
  result.moments = allocs.size();
  result.ranges.reserve(blocks.size());
  const auto moment = [&](uint64_t time) {
    return static_cast<uint32_t>(std::lower_bound(allocs.begin(), allocs.end(), time) - allocs.begin());
  };
  for (const Lifetime& b : blocks)
    result.ranges.emplace_back(b.lower < b.upper ? std::pair{moment(b.lower), moment(b.upper)} : std::pair{0u, 0u});
  return result;
}

uint64_t place(const std::vector<Lifetime>& blocks, const std::vector<uint32_t>& order, const MomentRanges& time,
               uint64_t rounding, std::vector<uint64_t>* offsets) {
  OccupancyTree taken(time.moments);
  std::vector<uint64_t> offset(blocks.size(), 0);
  uint64_t footprint = 0;
  for (const uint32_t i : order) {
    const auto [from, to] = time.ranges[i];
    if (from == to) continue;  // an empty life meets no other block
    const uint64_t size = round_up(blocks[i].size, rounding);
    const uint64_t at = taken.lowest_free(from, to, size);
    taken.occupy(from, to, at, at + size);
    offset[i] = at;
    footprint = std::max(footprint, at + size);
  }
  if (offsets) *offsets = std::move(offset);
  return footprint;
}

}  // namespace

std::vector<Lifetime> read_lifetimes(const std::string& trace_path, uint32_t trace_device) {
  TraceReader reader(trace_path);
  std::vector<Lifetime> blocks;
  absl::flat_hash_map<uint64_t, size_t> open;  // trace address -> index in blocks
  std::vector<Event> batch;
  uint64_t trace_index = 0;
  uint64_t time = 0;
  while (reader.next_batch(batch)) {
    for (const Event& event : batch) {
      const uint64_t index = trace_index++;
      if (event.device != trace_device) continue;
      if (event.kind == EventKind::alloc) {
        const bool preexisting = event.has_flag(kPreexisting);
        const uint64_t now = preexisting ? 0 : time++;
        if (event.size == 0) continue;
        if (open.contains(event.address))
          throw InputError::at_event(trace_path, index,
                                     "alloc at " + hex(event.address) + " while a block there is still live");
        open.emplace(event.address, blocks.size());
        blocks.push_back(Lifetime{blocks.size(), now, 0, event.size});
      } else if (event.kind == EventKind::free_completed) {
        const uint64_t now = time++;
        const auto it = open.find(event.address);
        if (it == open.end())
          throw InputError::at_event(trace_path, index,
                                     "free_completed of " + hex(event.address) + ", which is not a live block");
        blocks[it->second].upper = now + 1;  // alive through its free event
        open.erase(it);
      }
    }
  }
  for (const auto& [address, block] : open) blocks[block].upper = time + 1;
  return blocks;
}

uint64_t live_peak(const std::vector<Lifetime>& blocks, uint64_t rounding) {
  // +size at lower, -size at upper; ends sort before starts at the same time (half-open).
  std::vector<std::pair<uint64_t, int64_t>> changes;
  changes.reserve(blocks.size() * 2);
  for (const Lifetime& b : blocks) {
    const auto size = static_cast<int64_t>(round_up(b.size, rounding));
    changes.emplace_back(b.lower, size);
    changes.emplace_back(b.upper, -size);
  }
  std::sort(changes.begin(), changes.end());
  int64_t live = 0;
  int64_t peak = 0;
  for (const auto& [time, change] : changes) peak = std::max(peak, live += change);
  return static_cast<uint64_t>(peak);
}

uint64_t greedy_by_size(const std::vector<Lifetime>& blocks, uint64_t rounding, std::vector<uint64_t>* offsets) {
  return place(blocks, placement_order(blocks), moment_ranges(blocks), rounding, offsets);
}

OfflineBound compute_bound(const std::vector<Lifetime>& blocks) {
  OfflineBound bound;
  bound.blocks = blocks.size();
  for (const Lifetime& b : blocks) bound.events = std::max(bound.events, b.upper);
  const auto start = std::chrono::steady_clock::now();
  bound.requested_peak = live_peak(blocks);
  bound.rounded_peak = live_peak(blocks, 512);
  const std::vector<uint32_t> order = placement_order(blocks);
  const MomentRanges time = moment_ranges(blocks);
  // The two placements are independent: one on another thread.
  auto rounded = std::async(std::launch::async, [&] { return place(blocks, order, time, 512, nullptr); });
  bound.greedy_requested = place(blocks, order, time, 1, nullptr);
  bound.greedy_rounded = rounded.get();
  bound.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return bound;
}

void write_minimalloc_csv(const std::vector<Lifetime>& blocks, const std::string& path) {
  OutputFile out(path);
  std::string csv = "id,lower,upper,size\n";
  for (const Lifetime& b : blocks) {
    csv += std::to_string(b.id) + ',' + std::to_string(b.lower) + ',' + std::to_string(b.upper) + ',' +
           std::to_string(b.size) + '\n';
    if (csv.size() >= (1 << 20)) out.write(csv), csv.clear();  // a few MiB at a time, however many blocks
  }
  out.write(csv);
  out.commit();
}

nlohmann::json to_json(const OfflineBound& b, const std::string& trace, const std::string& minimalloc) {
  return {{"trace", trace},
          {"blocks", b.blocks},
          {"events", b.events},
          {"requested_peak", b.requested_peak},
          {"rounded_peak", b.rounded_peak},
          {"greedy_requested", b.greedy_requested},
          {"greedy_rounded", b.greedy_rounded},
          {"seconds", b.seconds},
          {"minimalloc",
           minimalloc.empty() ? nlohmann::json(nullptr) : nlohmann::json{{"path", minimalloc}, {"blocks", b.blocks}}}};
}

}  // namespace memreplay
