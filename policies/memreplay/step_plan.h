// StepPlan: where each allocation of a repeating run goes from now on, planned from its last
// period (PeriodDetector). A run that repeats itself is a known sequence of blocks with known
// lifetimes, and placing them is the offline problem that static memory planners solve (TFLite's
// and XLA's "greedy by size"): the largest blocks first, each at the lowest address that no block
// live at the same time occupies. The plan packs the period's blocks above every block live now:
// the long-lived ones (weights, optimizer state) stay where they are, with whatever holes the run
// left between them (unmapped pages in a hole cost nothing), and the period's own blocks that are
// still live (gradients kept until the next step makes them again) are freed during the first
// period, as the plan makes their successors elsewhere. Followed period after period, the plan
// touches the same pages every time, so once they are mapped a step makes no device call.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "policies/detail/interval_set.h"
#include "policies/memreplay/period_detector.h"

namespace memreplay::detail {

struct StepPlan {
  // The most slots planned (places in the period x copies): the packing compares each block with
  // the others.
  static constexpr uint64_t kMaxSlots = uint64_t{1} << 12;

  struct Slot {
    uint64_t key;
    uint64_t bytes;
    uint64_t address;
    // The start of the block right below it when it is placed, once the plan runs period after
    // period (one of its slots, or the highest long-lived block): its free neighbour is where the
    // slot lies. 0: none.
    uint64_t below;
  };
  // The plan repeats every copies x period allocations: a block that outlives its period still
  // lives when its place comes round again, and the next one goes to another copy of the place.
  // Allocation first_seq + t takes slot t mod slots.size().
  uint64_t first_seq = 0;
  std::vector<Slot> slots;
  std::vector<uint64_t> addresses;  // of the slots, sorted, each once
  IntervalSet pages;  // the pages the planned blocks and the long-lived ones touch
  uint64_t page_bytes_total = 0;

  const Slot& slot_for(uint64_t seq) const { return slots[(seq - first_seq) % slots.size()]; }
};

// What a plan is made from.
struct StepPlanInput {
  // The last period's allocations (sizes rounded as the arena takes them, lifetimes known),
  // repeated `copies` times.
  std::vector<PeriodDetector::Allocation> period;
  uint64_t copies = 1;
  // Blocks live now that stay through the plan: in no slot's way, and in its pages.
  struct Extent {
    uint64_t start, end;
  };
  std::vector<Extent> long_lived;
  // Slots that keep an address: the blocks of earlier periods live now, each as the slot its
  // allocation had (slot = place + copy x period).
  struct Pinned {
    uint64_t slot, address;
  };
  std::vector<Pinned> pinned;
  // Where each slot's block went in the periods just run (0: unknown): taken where it still
  // holds (no slot live beside it is there, and its pages are mapped now where `mapped` is
  // given), so that a plan close to what the run already does moves few blocks.
  std::vector<uint64_t> observed;
  // The pages mapped now, or null: a slot that is not pinned or kept goes to the lowest place
  // whose pages are all mapped where there is one, else to the lowest place, so that the plan's
  // first period maps and moves less.
  const IntervalSet* mapped = nullptr;
  uint64_t first_seq = 0;
  uint64_t page = 0;
  uint64_t lo = 0, hi = 0;  // the address space for slots that are not pinned or observed
};

// The plan, or nullopt when it has more than kMaxSlots slots, a lifetime is unknown or longer
// than its copies, or a slot finds no room.
std::optional<StepPlan> plan_step(const StepPlanInput& input);

}  // namespace memreplay::detail
