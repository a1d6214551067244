// One device's trace entries as the snapshot importer collects them: a TraceStep (24 bytes) plus
// time and stack (16 bytes) per entry. Up to kInMemoryEntries they stay in memory; past that they
// go to two unlinked scratch files (scratch_file.h) in batches, and are mapped once sealed. The
// passes over them (state rebuild, pool assignment, empty-cache inference, output) then read the
// maps, and release() gives back the pages a pass has finished with, so resident memory follows
// the live allocator state, not the length of the trace.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "recorder/import/allocator_state.h"
#include "recorder/import/huge_page_array.h"
#include "recorder/import/scratch_file.h"

namespace memreplay {

class StepSpool {
 public:
  static constexpr size_t kInMemoryEntries = size_t{1} << 20;

  // `for_file` names the input in errors about the scratch files.
  explicit StepSpool(std::string for_file) : for_file_(std::move(for_file)) {}

  [[gnu::always_inline]] void push(const TraceStep& step, uint64_t time_ns, uint32_t stack) {
    if (!steps_.reserved()) reserve();
    steps_.push_back(step);
    sides_.push_back({time_ns, stack, 0});
    ++size_;
    if (spilled() ? steps_.size() == kBatch : size_ == kInMemoryEntries) spill();
  }
  size_t size() const { return size_; }

  // Ends the pushes; steps(), time() and stack() are valid from here on.
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

  bool spilled() const { return step_file_ != nullptr; }
  void spill();
  void reserve();
  const Side& side(size_t i) const { return sides_view_[i]; }

  std::string for_file_;
  size_t size_ = 0;
  HugePageArray<TraceStep> steps_;  // in memory, or the batch not yet written
  HugePageArray<Side> sides_;
  std::unique_ptr<ScratchFile> step_file_, side_file_;
  MappedBytes step_map_, side_map_;
  std::span<const TraceStep> view_;
  const Side* sides_view_ = nullptr;
};

}  // namespace memreplay
