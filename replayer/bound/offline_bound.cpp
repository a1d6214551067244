#include "replayer/bound/offline_bound.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>

#include <absl/container/flat_hash_map.h>

#include "proto/input_error.h"
#include "proto/trace_reader.h"

namespace memreplay {
namespace {

uint64_t round_up(uint64_t value, uint64_t to) { return (value + to - 1) / to * to; }

std::string hex(uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
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
          throw InputError::at_event(trace_path, index, "alloc at " + hex(event.address) + " while a block there is still live");
        open.emplace(event.address, blocks.size());
        blocks.push_back(Lifetime{blocks.size(), now, 0, event.size});
      } else if (event.kind == EventKind::free_completed) {
        const uint64_t now = time++;
        const auto it = open.find(event.address);
        if (it == open.end())
          throw InputError::at_event(trace_path, index, "free_completed of " + hex(event.address) + ", which is not a live block");
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
  if (blocks.empty()) return 0;
  std::vector<size_t> order(blocks.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (blocks[a].size != blocks[b].size) return blocks[a].size > blocks[b].size;
    return blocks[a].upper - blocks[a].lower > blocks[b].upper - blocks[b].lower;
  });
  // Placed blocks indexed by time at several scales: level L cuts time into buckets of
  // kWidth << L events, and a block is listed at the smallest level whose buckets are at least as
  // long as its life (so in at most two buckets). A query reads, at every level, the buckets its
  // own life touches: about the blocks it collides with, plus a few near its ends.
  constexpr uint64_t kWidth = 16;
  uint64_t end = 0;
  for (const Lifetime& b : blocks) end = std::max(end, b.upper);
  std::vector<std::vector<std::vector<uint32_t>>> levels;
  for (uint64_t width = kWidth;; width *= 2) {
    levels.emplace_back(end / width + 1);
    if (width >= end) break;
  }
  std::vector<uint64_t> offset(blocks.size(), 0);
  std::vector<uint32_t> seen(blocks.size(), 0);
  std::vector<std::pair<uint64_t, uint64_t>> taken;  // [offset, end) of colliding placed blocks
  uint64_t footprint = 0;
  uint32_t stamp = 0;
  for (const size_t i : order) {
    const Lifetime& b = blocks[i];
    const uint64_t size = round_up(b.size, rounding);
    ++stamp;
    taken.clear();
    for (size_t level = 0; level < levels.size(); ++level) {
      const uint64_t width = kWidth << level;
      for (uint64_t k = b.lower / width; k <= (b.upper - 1) / width; ++k)
        for (const uint32_t j : levels[level][k]) {
          if (seen[j] == stamp) continue;
          seen[j] = stamp;
          if (blocks[j].lower < b.upper && b.lower < blocks[j].upper)
            taken.emplace_back(offset[j], offset[j] + round_up(blocks[j].size, rounding));
        }
    }
    std::sort(taken.begin(), taken.end());
    uint64_t at = 0;  // the lowest offset with `size` bytes free over the block's lifetime
    for (const auto& [start, stop] : taken) {
      if (start >= at + size) break;
      at = std::max(at, stop);
    }
    offset[i] = at;
    footprint = std::max(footprint, at + size);
    size_t level = 0;
    while ((kWidth << level) < b.upper - b.lower && level + 1 < levels.size()) ++level;
    const uint64_t width = kWidth << level;
    for (uint64_t k = b.lower / width; k <= (b.upper - 1) / width; ++k) levels[level][k].push_back(static_cast<uint32_t>(i));
  }
  if (offsets) *offsets = std::move(offset);
  return footprint;
}

OfflineBound compute_bound(const std::vector<Lifetime>& blocks) {
  OfflineBound bound;
  bound.blocks = blocks.size();
  for (const Lifetime& b : blocks) bound.events = std::max(bound.events, b.upper);
  const auto start = std::chrono::steady_clock::now();
  bound.requested_peak = live_peak(blocks);
  bound.rounded_peak = live_peak(blocks, 512);
  // The two placements are independent: one on another thread.
  auto rounded = std::async(std::launch::async, [&] { return greedy_by_size(blocks, 512); });
  bound.greedy_requested = greedy_by_size(blocks);
  bound.greedy_rounded = rounded.get();
  bound.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return bound;
}

void write_minimalloc_csv(const std::vector<Lifetime>& blocks, const std::string& path) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary);
    out << "id,lower,upper,size\n";
    for (const Lifetime& b : blocks) out << b.id << ',' << b.lower << ',' << b.upper << ',' << b.size << '\n';
    out.close();
    if (!out) {
      std::error_code ignored;
      std::filesystem::remove(temporary, ignored);
      throw InputError(path + ": cannot write the MiniMalloc CSV");
    }
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error) {
    std::filesystem::remove(temporary, error);
    throw InputError(path + ": cannot write the MiniMalloc CSV");
  }
}

}  // namespace memreplay
