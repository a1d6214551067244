// The reading half of the snapshot importer (pytorch_snapshot_importer.h): the pickle's tree
// checked and turned into what the output stage needs (SnapshotContent). Trace entries come in
// while the pickle is still being read (pickle::DeviceTraceSink, batches of device_traces[d]) and
// go to each device's StepSpool; read() then takes the rest of the tree: segments (the final
// state), lists that were not streamed, external_annotations, allocator_settings, the header.
//
// The reading itself is SnapshotTreeReader (snapshot_tree_reader.h), shared with readers of
// snapshots held as other values than a pickle's (Python objects in memory).
//
// Errors are InputError naming the byte offset of the value at fault, or the trace entry's index.
// A work budget (about 2 units per input byte) refuses pickles whose aliased objects would expand
// into far more work and memory than their size.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "proto/event.h"
#include "proto/frame_text.h"
#include "proto/trace.pb.h"
#include "recorder/import/input/growing_input.h"
#include "recorder/import/input/step_spool.h"
#include "recorder/import/pytorch/allocator_state.h"
#include "recorder/import/pytorch/pool_assignment.h"
#include "recorder/import/pytorch/snapshot_entry_keys.h"
#include "recorder/import/unpickler/pickle_reader.h"

namespace memreplay {

// One device of the snapshot: its trace in columns (StepSpool: steps, times, local stack ids),
// its external_annotations by time, and its final state from `segments` (streams as labels).
struct SnapshotDevice {
  explicit SnapshotDevice(const std::string& file) : spool(file) {}
  StepSpool spool;  // oom: address holds device_free; annotation: its text index
  std::vector<Event> annotations;  // aux: index into SnapshotContent::annotation_texts
  AllocatorState final_state;
};

struct SnapshotContent {
  proto::TraceHeader header;  // all but starts_mid_run and the pool table
  PoolIds pool_ids;  // segment_pool_id pairs -> the pool ids events carry
  std::vector<SnapshotDevice> devices;
  std::vector<KeyValues> annotation_texts;  // annotation events' aux indexes this
  std::vector<std::vector<FrameText>> stacks;  // local stack k is stacks[k - 1]
  snapshot_entry::StreamTable streams;  // stream labels -> cudaStream_t handles
};

// Told of every trace entry and every new stack as the reader takes them (chunks_ahead.h), in the
// order the spool and SnapshotContent::stacks hold them: a stack before the entries that name it.
class TraceEntryListener {
 public:
  virtual ~TraceEntryListener() = default;
  virtual void stack(const std::vector<FrameText>& frames) = 0;  // local stack k, k = 1, 2, ...
  // `stream`: the entry's cudaStream_t; `stack`: its local stack, 0 for none.
  virtual void entry(uint32_t device, const TraceStep& step, uint64_t time_ns, uint64_t stream, uint32_t stack) = 0;
};

class SnapshotReader final : public pickle::DeviceTraceSink {
 public:
  // `input_bytes`: size of the pickle, which bounds how many items it can genuinely hold; of
  // what there is so far when `growing` (the rest is budgeted when the budget runs short).
  SnapshotReader(const std::string& file, uint64_t input_bytes, const GrowingInput* growing = nullptr,
                 TraceEntryListener* listener = nullptr);
  ~SnapshotReader() override;

  void take(uint32_t list_index, const pickle::Tree& tree, std::span<const pickle::Ref> items) override;
  // Reads the rest of the finished tree; the spools are sealed. The content lives as long as the reader.
  SnapshotContent& read(const pickle::Tree& tree);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace memreplay
