#include "recorder/import/step_spool.h"

#include <type_traits>

namespace memreplay {

static_assert(std::is_trivially_copyable_v<TraceStep>, "TraceSteps are written to scratch files as bytes");

// Reserved at the first entry (a device without entries costs nothing): the in-memory part, then
// the batches, in the same range.
void StepSpool::reserve() {
  steps_ = HugePageArray<TraceStep>(kInMemoryEntries);
  sides_ = HugePageArray<Side>(kInMemoryEntries);
}

void StepSpool::spill() {
  if (!spilled()) {
    step_file_ = std::make_unique<ScratchFile>(for_file_);
    side_file_ = std::make_unique<ScratchFile>(for_file_);
  }
  step_file_->append(steps_.data(), steps_.size() * sizeof(TraceStep));
  side_file_->append(sides_.data(), sides_.size() * sizeof(Side));
  // The in-memory part before the first spill is big: its pages go back, but a batch's.
  steps_.clear(kBatch);
  sides_.clear(kBatch);
}

void StepSpool::seal() {
  if (!spilled()) {
    view_ = steps_.view();
    sides_view_ = sides_.data();
    return;
  }
  if (steps_.size() > 0) spill();
  steps_ = {};
  sides_ = {};
  step_map_ = step_file_->map();
  side_map_ = side_file_->map();
  step_file_.reset();  // the maps keep the files' pages
  side_file_.reset();
  view_ = {reinterpret_cast<const TraceStep*>(step_map_.data()), size_};
  sides_view_ = reinterpret_cast<const Side*>(side_map_.data());
}

void StepSpool::release(size_t begin, size_t end) const {
  step_map_.release(begin * sizeof(TraceStep), end * sizeof(TraceStep));
  side_map_.release(begin * sizeof(Side), end * sizeof(Side));
}

}  // namespace memreplay
