// One device's trace entries as the snapshot importer collects them: a TraceStep (24 bytes) plus
// time and stack (16 bytes) per entry. Up to kInMemoryEntries they stay in memory; past that they
// go to two unlinked scratch files (scratch_file.h) in batches, and are mapped once sealed. A batch
// is written on a thread of its own while the next one fills: the unpickling thread is the
// import's critical path, and write() of 40 B per entry (560 MB for a 1 GB snapshot) took a
// fifth of its time on the project VM. The passes over them (state rebuild, pool assignment,
// empty-cache inference, output) then read the maps, and release() gives back the pages a pass has finished with, so
// resident memory follows the live allocator state, not the length of the trace.
#pragma once

#include <cstdint>
#include <future>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "recorder/import/input/huge_page_array.h"
#include "recorder/import/input/scratch_file.h"
#include "recorder/import/pytorch/allocator_state.h"

namespace memreplay {

class StepSpool {
 public:
  static constexpr size_t kInMemoryEntries = size_t{1} << 20;

  // `for_file` names the input in errors about the scratch files.
  explicit StepSpool(std::string for_file) : for_file_(std::move(for_file)) {}

  // `step` by value: a caller that makes it from values in registers stores them once, here.
  [[gnu::always_inline]] void push(TraceStep step, uint64_t time_ns, uint32_t stack) {
    Batch& batch = batches_[filling_];
    if (!batch.steps.reserved()) reserve();
    batch.steps.push_back(step);
    batch.sides.push_back({time_ns, stack, 0});
    ++size_;
    if (spilled() ? batch.steps.size() == kBatch : size_ == kInMemoryEntries) spill();
  }
  size_t size() const { return size_; }

  // Ends the pushes; steps(), time() and stack() are valid from here on. Throws the InputError of
  // a batch that could not be written (disk full), if spill() has not already.
  void seal();
  std::span<const TraceStep> steps() const { return view_; }
  uint64_t time(size_t i) const { return side(i).time_ns; }
  uint32_t stack(size_t i) const { return side(i).stack; }
  uint64_t last_time() const { return size_ == 0 ? 0 : time(size_ - 1); }
  // Gives back the mapped pages of entries [begin, end) (nothing for entries held in memory).
  void release(size_t begin, size_t end) const;
  void release_all() const { release(0, size_); }

 private:
  struct Side {
    uint64_t time_ns;
    uint32_t stack;
    uint32_t unused;
  };
  static constexpr size_t kBatch = size_t{1} << 16;
  // The entries in memory (the first, kInMemoryEntries long), or a batch filling or being written.
  struct Batch {
    HugePageArray<TraceStep> steps;
    HugePageArray<Side> sides;
  };

  bool spilled() const { return step_file_ != nullptr; }
  // Starts writing the filling batch and switches to the other, once its write has ended.
  void spill();
  // Appends entries to the files (on the writing thread, or at the seal).
  static void append(ScratchFile& step_file, ScratchFile& side_file, std::span<const TraceStep> steps,
                     std::span<const Side> sides);
  void wait_for_write();
  void reserve();
  const Side& side(size_t i) const { return sides_view_[i]; }

  std::string for_file_;
  size_t size_ = 0;
  Batch batches_[2];
  int filling_ = 0;
  std::unique_ptr<ScratchFile> step_file_, side_file_;
  std::future<void> writing_;  // the other batch's write; declared after what it uses (the files,
                               // the batches' pages), so that a spool's end waits for it first
  MappedBytes step_map_, side_map_;
  std::span<const TraceStep> view_;
  const Side* sides_view_ = nullptr;
};

}  // namespace memreplay
