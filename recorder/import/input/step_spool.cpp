#include "recorder/import/input/step_spool.h"

#include <type_traits>

namespace memreplay {

static_assert(std::is_trivially_copyable_v<TraceStep>, "TraceSteps are written to scratch files as bytes");

// Reserved at the first entry (a device without entries costs nothing): the in-memory part, then
// the batches, in the same range; the second batch at the first spill.
void StepSpool::reserve() {
  const size_t capacity = spilled() ? kBatch : kInMemoryEntries;
  batches_[filling_] = {HugePageArray<TraceStep>(capacity), HugePageArray<Side>(capacity)};
}

void StepSpool::spill() {
  if (!spilled()) {  // created here, so that a scratch directory that cannot be used fails at once
    step_file_ = std::make_unique<ScratchFile>(for_file_);
    side_file_ = std::make_unique<ScratchFile>(for_file_);
  }
  wait_for_write();  // the other batch is free once its write has ended
  Batch& other = batches_[filling_ ^ 1];
  // The in-memory part before the first spill is big: its pages go back, but a batch's.
  if (other.steps.reserved()) {
    other.steps.clear(kBatch);
    other.sides.clear(kBatch);
  }
  // The write holds the batch's pages and the files, never the spool: a vector of devices may
  // move the spool while it runs.
  const Batch& full = batches_[filling_];
  writing_ = std::async(std::launch::async,
                        [steps = full.steps.view(), sides = full.sides.view(), step_file = step_file_.get(),
                         side_file = side_file_.get()] { append(*step_file, *side_file, steps, sides); });
  filling_ ^= 1;
}

void StepSpool::append(ScratchFile& step_file, ScratchFile& side_file, std::span<const TraceStep> steps,
                       std::span<const Side> sides) {
  step_file.append(steps.data(), steps.size_bytes());
  side_file.append(sides.data(), sides.size_bytes());
}

void StepSpool::wait_for_write() {
  if (writing_.valid()) writing_.get();  // rethrows the write's InputError
}

void StepSpool::seal() {
  Batch& last = batches_[filling_];
  if (!spilled()) {
    view_ = last.steps.view();
    sides_view_ = last.sides.data();
    return;
  }
  wait_for_write();
  append(*step_file_, *side_file_, last.steps.view(), last.sides.view());
  for (Batch& batch : batches_) batch = {};
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
