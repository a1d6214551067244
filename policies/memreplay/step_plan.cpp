#include "policies/memreplay/step_plan.h"

#include <algorithm>

namespace memreplay::detail {
namespace {

// The lowest address at or above `lo` where `bytes` fits between `taken` (sorted by start).
std::optional<uint64_t> lowest_fit(const std::vector<std::pair<uint64_t, uint64_t>>& taken, uint64_t bytes, uint64_t lo,
                                   uint64_t hi) {
  uint64_t cursor = lo;
  for (const auto& [start, end] : taken) {
    if (start >= cursor && start - cursor >= bytes) return cursor;
    cursor = std::max(cursor, end);
  }
  if (cursor <= hi && hi - cursor >= bytes) return cursor;
  return std::nullopt;
}

// The lowest address at or above `lo` where `bytes` fits between `taken` (sorted by start) and
// inside one run of `mapped`.
std::optional<uint64_t> lowest_mapped_fit(const std::vector<std::pair<uint64_t, uint64_t>>& taken, uint64_t bytes,
                                          uint64_t lo, uint64_t hi, const IntervalSet& mapped) {
  auto run = mapped.begin();
  // The lowest piece of the free span [start, end) inside a mapped run.
  const auto fit_in = [&](uint64_t start, uint64_t end) -> std::optional<uint64_t> {
    while (run != mapped.end() && run->second <= start) ++run;
    for (auto it = run; it != mapped.end() && it->first < end; ++it) {
      const uint64_t from = std::max(start, it->first);
      const uint64_t to = std::min(end, it->second);
      if (to > from && to - from >= bytes) return from;
    }
    return std::nullopt;
  };
  uint64_t cursor = lo;
  for (const auto& [start, end] : taken) {
    if (start > cursor)
      if (const auto found = fit_in(cursor, start)) return found;
    cursor = std::max(cursor, end);
  }
  if (cursor < hi) return fit_in(cursor, hi);
  return std::nullopt;
}

// Page-aligned spans merged into runs.
IntervalSet merged_pages(std::vector<std::pair<uint64_t, uint64_t>> spans) {
  IntervalSet pages;
  std::sort(spans.begin(), spans.end());
  uint64_t run_start = 0, run_end = 0;
  for (const auto& [start, end] : spans) {
    if (run_end != 0 && start <= run_end) {
      run_end = std::max(run_end, end);
      continue;
    }
    if (run_end != 0) pages.insert(run_start, run_end);
    run_start = start;
    run_end = end;
  }
  if (run_end != 0) pages.insert(run_start, run_end);
  return pages;
}

}  // namespace

std::optional<StepPlan> plan_step(const StepPlanInput& input) {
  const auto& period = input.period;
  const uint64_t length = period.size();
  const uint64_t circle = length * input.copies;  // slot t lives over [t, t + lifetime) mod circle
  if (length == 0 || input.copies == 0 || circle > StepPlan::kMaxSlots) return std::nullopt;
  for (const auto& allocation : period)
    if (allocation.lifetime == 0 || allocation.lifetime > circle) return std::nullopt;
  const auto lifetime = [&](uint64_t slot) { return period[slot % length].lifetime; };
  const auto bytes = [&](uint64_t slot) { return period[slot % length].bytes; };
  const auto live_at = [&](uint64_t slot, uint64_t time) { return (time + circle - slot) % circle < lifetime(slot); };

  std::vector<std::optional<uint64_t>> address(circle);
  std::vector<uint64_t> placed;
  for (const auto& block : input.pinned) {
    if (block.slot >= circle || address[block.slot]) return std::nullopt;
    address[block.slot] = block.address;
    placed.push_back(block.slot);
  }
  // Greedy by size: the largest first (the longest-lived among equals); each where it was seen,
  // else where another copy of its place went (one place for a block that does not outlive its
  // period), else at the lowest address no slot live beside it and no long-lived block occupies,
  // on mapped pages where it can.
  std::vector<uint64_t> order;
  for (uint64_t slot = 0; slot < circle; ++slot)
    if (!address[slot]) order.push_back(slot);
  std::stable_sort(order.begin(), order.end(), [&](uint64_t a, uint64_t b) {
    if (bytes(a) != bytes(b)) return bytes(a) > bytes(b);
    return lifetime(a) > lifetime(b);
  });
  std::vector<std::pair<uint64_t, uint64_t>> taken;
  const auto fits_at = [&](uint64_t slot, uint64_t start) {
    return std::none_of(taken.begin(), taken.end(),
                        [&](const auto& block) { return block.first < start + bytes(slot) && start < block.second; });
  };
  for (const uint64_t slot : order) {
    taken.clear();
    for (const auto& extent : input.long_lived) taken.emplace_back(extent.start, extent.end);
    for (const uint64_t other : placed)
      if (live_at(slot, other) || live_at(other, slot))
        taken.emplace_back(*address[other], *address[other] + bytes(other));
    std::sort(taken.begin(), taken.end());
    const auto mapped_at = [&](uint64_t start) {
      const uint64_t page = input.page;
      return input.mapped == nullptr ||
             input.mapped->holds(start / page * page, (start + bytes(slot) + page - 1) / page * page);
    };
    if (slot < input.observed.size() && input.observed[slot] != 0 && fits_at(slot, input.observed[slot]) &&
        mapped_at(input.observed[slot]))
      address[slot] = input.observed[slot];
    for (uint64_t copy = slot % length; copy < circle && !address[slot]; copy += length)
      if (copy != slot && address[copy] && fits_at(slot, *address[copy])) address[slot] = address[copy];
    if (!address[slot] && input.mapped != nullptr)
      address[slot] = lowest_mapped_fit(taken, bytes(slot), input.lo, input.hi, *input.mapped);
    if (!address[slot]) address[slot] = lowest_fit(taken, bytes(slot), input.lo, input.hi);
    if (!address[slot]) return std::nullopt;
    placed.push_back(slot);
  }

  StepPlan plan;
  plan.first_seq = input.first_seq;
  plan.slots.resize(circle);
  // Each slot's lower neighbour at its allocation: the highest block below it live then.
  for (uint64_t slot = 0; slot < circle; ++slot) {
    uint64_t below = 0;
    for (const auto& extent : input.long_lived)
      if (extent.start < *address[slot]) below = std::max(below, extent.start);
    for (uint64_t other = 0; other < circle; ++other)
      if (other != slot && live_at(other, slot) && *address[other] < *address[slot])
        below = std::max(below, *address[other]);
    plan.slots[slot] = {period[slot % length].key, bytes(slot), *address[slot], below};
    plan.addresses.push_back(*address[slot]);
  }
  std::sort(plan.addresses.begin(), plan.addresses.end());
  plan.addresses.erase(std::unique(plan.addresses.begin(), plan.addresses.end()), plan.addresses.end());

  std::vector<std::pair<uint64_t, uint64_t>> spans;
  const uint64_t page = input.page;
  const auto page_span = [&](uint64_t start, uint64_t end) {
    spans.emplace_back(start / page * page, (end + page - 1) / page * page);
  };
  for (const auto& extent : input.long_lived) page_span(extent.start, extent.end);
  for (uint64_t slot = 0; slot < circle; ++slot) page_span(*address[slot], *address[slot] + bytes(slot));
  plan.pages = merged_pages(std::move(spans));
  for (const auto& [start, end] : plan.pages) plan.page_bytes_total += end - start;
  return plan;
}

}  // namespace memreplay::detail
