// Recording API for programs with their own allocator: a few calls that write a memreplay trace
// (.mrt) while the program runs, the same format the PyTorch and CUDA recorders write.
//
//   memreplay::recording::start("run.mrt");
//   void* p = my_alloc(bytes, stream);
//   memreplay::recording::on_alloc(p, bytes, stream);
//   ...
//   memreplay::recording::on_free(p, stream);
//   memreplay::recording::stop();            // or let exit() do it
//
// One recording per process at a time. The on_* calls may come from any thread at any time:
// they cost a few tens of ns, never block, never throw, and do nothing while no recording runs
// (see live_recorder.h for the threading, memory and crash guarantees). start() never throws
// either: when the file cannot be written it says why on stderr and returns false, and the
// program goes on unrecorded.
//
// What the calls mean (proto/event.h): on_alloc/on_free are the application's requests, sizes as
// asked for; on_segment_alloc/on_segment_free are your allocator's own requests to the driver
// (cudaMalloc of a pool), which the replayer uses to compare against what a policy would do.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "proto/frame_text.h"

namespace memreplay::recording {

struct DeviceDescription {
  uint32_t index = 0;
  std::string name;  // e.g. "NVIDIA H200"
  uint64_t total_memory = 0;  // bytes
  // The per-process cap the recorded allocator has on it, in bytes (0: none), which a replay
  // uses when given no capacity (trace.proto's DeviceInfo.cap_bytes).
  uint64_t cap_bytes = 0;
};

struct Options {
  std::string source = "api";  // header.source
  std::vector<DeviceDescription> devices;
  // Settings of the allocator being recorded, for the trace header (key -> value).
  std::vector<std::pair<std::string, std::string>> allocator_settings;
  uint32_t events_per_chunk = 16384;
  // What a SIGKILL can lose at most: events of the last flush_interval.
  std::chrono::milliseconds flush_interval{500};
  // Events a thread may have in flight before new ones are dropped (and counted).
  uint32_t thread_buffer_events = 1u << 14;
};

// Starts recording to `path`, replacing the file; stops a recording already running first.
bool start(const std::string& path, const Options& options = {});
// Writes the rest and the footer. Calls that race with stop() may or may not be recorded.
void stop();
// Every event recorded so far is in the file when this returns true.
bool flush();
bool recording();

struct Stats {
  uint64_t recorded = 0, written = 0, dropped = 0;
  bool failed = false;
};
Stats stats();

using Stream = uint64_t;  // cudaStream_t as an integer; 0 = legacy default stream

// The allocator handed `bytes` at `ptr` to the application, for use on `stream`.
void on_alloc(const void* ptr, size_t bytes, Stream stream = 0, uint32_t device = 0) noexcept;
// The application gave the block back and it is reusable at once (free_requested +
// free_completed); the trace takes the size from the matching on_alloc.
void on_free(const void* ptr, Stream stream = 0, uint32_t device = 0) noexcept;
// For allocators that defer reuse (e.g. until other streams are done with the block): the
// application's release, and later the moment the block is reusable.
void on_free_requested(const void* ptr, Stream stream = 0, uint32_t device = 0) noexcept;
void on_free_completed(const void* ptr, Stream stream = 0, uint32_t device = 0) noexcept;
// An allocation that failed: `bytes` asked for, `device_free` bytes the device had free.
void on_oom(size_t bytes, Stream stream = 0, uint32_t device = 0, uint64_t device_free = 0) noexcept;

// The allocator's own memory from the driver.
void on_segment_alloc(const void* ptr, size_t bytes, Stream stream = 0, uint32_t device = 0) noexcept;
void on_segment_free(const void* ptr, Stream stream = 0, uint32_t device = 0) noexcept;
void on_empty_cache(uint32_t device = 0) noexcept;

// Streams and their ordering, which stream-aware policies follow.
void on_stream_create(Stream stream, uint32_t device = 0) noexcept;
void on_stream_destroy(Stream stream, uint32_t device = 0) noexcept;
void on_event_record(uint64_t event, Stream stream, uint32_t device = 0) noexcept;
void on_stream_wait_event(Stream stream, uint64_t event, uint32_t device = 0) noexcept;
// stream 0 and event 0: the whole device.
void on_synchronize(Stream stream = 0, uint64_t event = 0, uint32_t device = 0) noexcept;

// A marker with key=value metadata ("phase" = "backward"); allocates, so not for hot paths.
void annotate(const KeyValues& metadata, uint32_t device = 0) noexcept;

}  // namespace memreplay::recording
