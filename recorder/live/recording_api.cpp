#include "recorder/live/recording_api.h"
#include "recorder/live/process_command_line.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>
#include <vector>

#include "recorder/live/live_recorder.h"

namespace memreplay::recording {
namespace {

// The recording in progress. Recorders are never deleted: a thread may be inside an on_* call
// while another stops the recording, so a stopped recorder stays, closed and inert, in stopped()
// (each keeps its threads' buffers: start/stop cycles cost memory, by design).
std::atomic<LiveRecorder*> g_current{nullptr};
std::mutex g_control;  // start/stop
std::vector<std::unique_ptr<LiveRecorder>>& stopped() {
  static auto* const recorders = new std::vector<std::unique_ptr<LiveRecorder>>;  // never destroyed
  return *recorders;
}

void retire(LiveRecorder* r) {
  if (r == nullptr) return;
  r->close();
  stopped().emplace_back(r);
}

void record(EventKind kind, uint32_t device, Stream stream, uint64_t address, uint64_t size,
            uint64_t aux = 0) noexcept {
  LiveRecorder* r = g_current.load(std::memory_order_acquire);
  if (r == nullptr) return;
  r->record({.kind = kind, .device = device, .stream = stream, .address = address, .size = size, .aux = aux});
}

uint64_t address_of(const void* p) { return reinterpret_cast<uint64_t>(p); }

}  // namespace

bool start(const std::string& path, const Options& options) {
  std::lock_guard lock(g_control);
  retire(g_current.exchange(nullptr));
  try {
    LiveTraceHeader header;
    header.source = options.source;
    header.capture_time_ns = LiveRecorder::now_ns();
    header.command_line = process_command_line();
    header.pid = static_cast<uint64_t>(::getpid());
    for (const DeviceDescription& d : options.devices)
      header.devices.push_back({d.index, d.name, d.total_memory, d.cap_bytes});
    for (const auto& [key, value] : options.allocator_settings) header.allocator_settings[key] = value;
    LiveRecorderOptions live;
    live.events_per_chunk = options.events_per_chunk;
    live.flush_interval = options.flush_interval;
    live.thread_buffer_events = options.thread_buffer_events;
    live.fill_free_sizes = true;  // on_free may come without the size
    g_current.store(new LiveRecorder(path, header, live), std::memory_order_release);
    return true;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "memreplay: cannot record to %s: %s; the program goes on unrecorded\n", path.c_str(),
                 e.what());
    return false;
  }
}

void stop() {
  std::lock_guard lock(g_control);
  retire(g_current.exchange(nullptr));
}

bool flush() {
  LiveRecorder* r = g_current.load(std::memory_order_acquire);
  return r != nullptr && r->flush();
}

bool recording() { return g_current.load(std::memory_order_acquire) != nullptr; }

Stats stats() {
  std::lock_guard lock(g_control);
  LiveRecorder* r = g_current.load();
  if (r == nullptr) return {};
  const LiveRecorderStats s = r->stats();
  return {s.recorded, s.written, s.dropped, s.failed};
}

void on_alloc(const void* ptr, size_t bytes, Stream stream, uint32_t device) noexcept {
  record(EventKind::alloc, device, stream, address_of(ptr), bytes);
}

void on_free(const void* ptr, Stream stream, uint32_t device) noexcept {
  record(EventKind::free_requested, device, stream, address_of(ptr), 0);
  record(EventKind::free_completed, device, stream, address_of(ptr), 0);
}

void on_free_requested(const void* ptr, Stream stream, uint32_t device) noexcept {
  record(EventKind::free_requested, device, stream, address_of(ptr), 0);
}

void on_free_completed(const void* ptr, Stream stream, uint32_t device) noexcept {
  record(EventKind::free_completed, device, stream, address_of(ptr), 0);
}

void on_oom(size_t bytes, Stream stream, uint32_t device, uint64_t device_free) noexcept {
  record(EventKind::oom, device, stream, 0, bytes, device_free);
}

void on_segment_alloc(const void* ptr, size_t bytes, Stream stream, uint32_t device) noexcept {
  record(EventKind::segment_alloc, device, stream, address_of(ptr), bytes);
}

void on_segment_free(const void* ptr, Stream stream, uint32_t device) noexcept {
  record(EventKind::segment_free, device, stream, address_of(ptr), 0);
}

void on_empty_cache(uint32_t device) noexcept { record(EventKind::empty_cache, device, 0, 0, 0); }

void on_stream_create(Stream stream, uint32_t device) noexcept {
  record(EventKind::stream_create, device, stream, 0, 0);
}

void on_stream_destroy(Stream stream, uint32_t device) noexcept {
  record(EventKind::stream_destroy, device, stream, 0, 0);
}

void on_event_record(uint64_t event, Stream stream, uint32_t device) noexcept {
  record(EventKind::event_record, device, stream, 0, 0, event);
}

void on_stream_wait_event(Stream stream, uint64_t event, uint32_t device) noexcept {
  record(EventKind::stream_wait_event, device, stream, 0, 0, event);
}

void on_synchronize(Stream stream, uint64_t event, uint32_t device) noexcept {
  record(EventKind::synchronize, device, stream, 0, 0, event);
}

void annotate(const KeyValues& metadata, uint32_t device) noexcept {
  LiveRecorder* r = g_current.load(std::memory_order_acquire);
  if (r == nullptr) return;
  try {
    r->annotate(device, metadata);
  } catch (...) {}
}

}  // namespace memreplay::recording
