// LiveTrace: the trace of a run under a live policy, written through libmemreplay_record.so (its C
// API, loaded at run time as the PyTorch tracker loads it, so this library carries no recording
// core of its own): the job's alloc, free_requested + free_completed (one moment: the block went
// back to the policy), empty_cache and oom events, with their streams and pools, each private pool
// announced as the PyTorch tracker announces it (an annotation: pool, torch_pool_id, kind), and a
// private pool's release as a segment_free of that pool (address 0), as a replay reads a snapshot's. A simulator replay
// of it with the same policy (`memreplay replay T.mrt --policy SPEC`) makes the same decisions.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "replayer/live/allocation_observer.h"

struct memreplay_recorder;
struct memreplay_record_library;

namespace memreplay {

struct LiveTraceHeader {
  std::string policy_spec;
  uint32_t device_index = 0;
  uint64_t total_memory = 0;
  std::string device_name;
  std::optional<uint64_t> cap;  // the per-process cap the policy serves under (the header's device cap)
};

class LiveTrace final : public AllocationObserver {
 public:
  // Opens `path` with the recording library at `record_library`. Throws std::runtime_error, one
  // line naming what failed (the library cannot be loaded or is of another format, the file
  // cannot be written).
  LiveTrace(const std::string& path, const std::string& record_library, const LiveTraceHeader& header);
  ~LiveTrace() override;
  LiveTrace(const LiveTrace&) = delete;
  LiveTrace& operator=(const LiveTrace&) = delete;

  void on_alloc(uint64_t address, uint64_t requested, StreamId stream, PoolId pool) override;
  void on_free(uint64_t address, uint64_t requested, StreamId stream, PoolId pool) override;
  void on_empty_cache() override;
  void on_name_pool(PoolId pool, std::pair<uint64_t, uint64_t> torch_id, std::string_view kind) override;
  void on_release_pool(PoolId pool) override;
  void on_oom(uint64_t requested, StreamId stream, uint64_t free_bytes) override;

  // Writes the rest and the footer; false when the recording had failed (the library said why).
  // Events after it are dropped.
  bool close();
  // Events the recorder dropped (its buffers were full): the trace is then incomplete.
  uint64_t dropped() const;
  const std::string& path() const { return path_; }

 private:
  void record(uint32_t kind, uint64_t address, uint64_t size, StreamId stream, PoolId pool, uint64_t aux = 0);

  std::string path_;
  uint32_t device_;
  std::unique_ptr<memreplay_record_library> library_;
  memreplay_recorder* recorder_ = nullptr;
  std::atomic<bool> closed_{false};  // close() may run beside the allocator's record()
};

}  // namespace memreplay
