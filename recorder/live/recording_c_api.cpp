// The C API of memreplay_record.h over LiveRecorder.
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "proto/framing.h"
#include "recorder/live/live_recorder.h"
#include "recorder/live/memreplay_record.h"
#include "recorder/live/process_command_line.h"

namespace {

// The C header's copies of the format's numbers, held against their definitions in proto/: a kind
// added to proto/event.h stops this build until memreplay_record.h has it too.
using memreplay::EventKind;
static_assert(MEMREPLAY_FORMAT_MAJOR == memreplay::format::kFormatMajor &&
              MEMREPLAY_FORMAT_MINOR == memreplay::format::kFormatMinor);
static_assert(MEMREPLAY_KIND_COUNT == memreplay::kEventKindCount);
constexpr std::pair<int, EventKind> kCKinds[] = {
    {MEMREPLAY_ALLOC, EventKind::alloc},
    {MEMREPLAY_FREE_REQUESTED, EventKind::free_requested},
    {MEMREPLAY_FREE_COMPLETED, EventKind::free_completed},
    {MEMREPLAY_SEGMENT_ALLOC, EventKind::segment_alloc},
    {MEMREPLAY_SEGMENT_FREE, EventKind::segment_free},
    {MEMREPLAY_SEGMENT_MAP, EventKind::segment_map},
    {MEMREPLAY_SEGMENT_UNMAP, EventKind::segment_unmap},
    {MEMREPLAY_SNAPSHOT, EventKind::snapshot},
    {MEMREPLAY_OOM, EventKind::oom},
    {MEMREPLAY_EMPTY_CACHE, EventKind::empty_cache},
    {MEMREPLAY_ANNOTATION, EventKind::annotation},
    {MEMREPLAY_STREAM_CREATE, EventKind::stream_create},
    {MEMREPLAY_STREAM_DESTROY, EventKind::stream_destroy},
    {MEMREPLAY_EVENT_RECORD, EventKind::event_record},
    {MEMREPLAY_STREAM_WAIT_EVENT, EventKind::stream_wait_event},
    {MEMREPLAY_SYNCHRONIZE, EventKind::synchronize},
    {MEMREPLAY_ADDRESS_RESERVE, EventKind::address_reserve},
    {MEMREPLAY_ADDRESS_FREE, EventKind::address_free},
    {MEMREPLAY_PHYSICAL_ALLOC, EventKind::physical_alloc},
    {MEMREPLAY_PHYSICAL_FREE, EventKind::physical_free},
};
// Every kind once, each with its own number.
static_assert(std::size(kCKinds) == memreplay::kEventKindCount - 1);
static_assert([] {
  for (size_t i = 0; i < std::size(kCKinds); ++i)
    if (kCKinds[i].first != static_cast<int>(kCKinds[i].second) || kCKinds[i].first != static_cast<int>(i + 1))
      return false;
  return true;
}());
static_assert(MEMREPLAY_FLAG_PREEXISTING == uint32_t{memreplay::kPreexisting} &&
              MEMREPLAY_FLAG_FAILED == uint32_t{memreplay::kFailed} &&
              MEMREPLAY_FLAG_INFERRED == uint32_t{memreplay::kInferred} &&
              MEMREPLAY_FLAG_CAPTURED == uint32_t{memreplay::kCaptured});

using memreplay::ContextResolver;
using memreplay::FrameText;
using memreplay::LiveRecorder;

// Adapts the C resolver callbacks to ContextResolver.
class CResolver final : public ContextResolver {
 public:
  CResolver(memreplay_resolve_fn resolve, memreplay_discard_fn discard, void* user)
      : resolve_(resolve), discard_(discard), user_(user) {}

  void resolve(std::span<const Context> contexts, std::vector<std::vector<FrameText>>& frames) override {
    tokens_.clear();
    for (const Context& c : contexts) tokens_.push_back(c.token);
    frames.assign(contexts.size(), {});
    frames_ = &frames;
    resolve_(user_, tokens_.data(), tokens_.size(), &CResolver::emit, this);
    frames_ = nullptr;
  }

  void discard(std::span<const uint64_t> tokens) noexcept override {
    if (discard_ != nullptr) discard_(user_, tokens.data(), tokens.size());
  }

 private:
  static void emit(void* self, size_t index, const memreplay_frame* frames, size_t count) {
    auto* r = static_cast<CResolver*>(self);
    if (r->frames_ == nullptr || index >= r->frames_->size()) return;
    std::vector<FrameText>& out = (*r->frames_)[index];
    out.clear();
    for (size_t i = 0; i < count; ++i)
      out.push_back(
          {frames[i].filename ? frames[i].filename : "", frames[i].line, frames[i].name ? frames[i].name : ""});
  }

  memreplay_resolve_fn resolve_;
  memreplay_discard_fn discard_;
  void* user_;
  std::vector<uint64_t> tokens_;
  std::vector<std::vector<FrameText>>* frames_ = nullptr;
};

void set_error(char* error, size_t size, const std::string& what) {
  if (error == nullptr || size == 0) return;
  std::snprintf(error, size, "%s", what.c_str());
}

// "INDEX;TOTAL_BYTES;NAME"
void add_device(memreplay::LiveTraceHeader& header, const std::string& spec) {
  const size_t a = spec.find(';');
  const size_t b = a == std::string::npos ? a : spec.find(';', a + 1);
  memreplay::LiveTraceHeader::Device d;
  d.index = static_cast<uint32_t>(std::strtoul(spec.c_str(), nullptr, 10));
  if (a != std::string::npos) d.total_memory = std::strtoull(spec.c_str() + a + 1, nullptr, 10);
  if (b != std::string::npos) d.name = spec.substr(b + 1);
  header.devices.push_back(std::move(d));
}

// "INDEX;BYTES": the run's per-process cap on device INDEX, which need not be listed yet.
void add_device_cap(memreplay::LiveTraceHeader& header, const std::string& spec) {
  const size_t a = spec.find(';');
  if (a == std::string::npos) return;
  const auto index = static_cast<uint32_t>(std::strtoul(spec.c_str(), nullptr, 10));
  const uint64_t bytes = std::strtoull(spec.c_str() + a + 1, nullptr, 10);
  for (auto& d : header.devices)
    if (d.index == index) {
      d.cap_bytes = bytes;
      return;
    }
  memreplay::LiveTraceHeader::Device d;
  d.index = index;
  d.cap_bytes = bytes;
  header.devices.push_back(std::move(d));
}

}  // namespace

struct memreplay_recorder {
  memreplay_recorder(const std::string& path, const memreplay::LiveTraceHeader& header,
                     memreplay::LiveRecorderOptions options)
      : recorder(path, header, options) {}

  std::unique_ptr<CResolver> resolver;  // outlives recorder, whose destructor may still resolve
  LiveRecorder recorder;  // held by value: one dependent load less in memreplay_record()
};

extern "C" {

memreplay_recorder* memreplay_open(const char* path, const char* const* header, size_t header_pairs,
                                   const memreplay_options* options, char* error, size_t error_size) {
  try {
    memreplay::LiveTraceHeader h;
    h.source = "api";
    h.command_line = memreplay::process_command_line();
    h.pid = static_cast<uint64_t>(::getpid());
    h.capture_time_ns = LiveRecorder::now_ns();
    for (size_t i = 0; i < header_pairs; ++i) {
      const std::string key = header[2 * i] ? header[2 * i] : "";
      const std::string value = header[2 * i + 1] ? header[2 * i + 1] : "";
      if (key == "source")
        h.source = value;
      else if (key == "command_line")
        h.command_line = value;
      else if (key == "starts_mid_run")
        h.starts_mid_run = value == "1";
      else if (key == "captures_flagged")
        h.captures_flagged = value == "1";
      else if (key == "device")
        add_device(h, value);
      else if (key == "device_cap")
        add_device_cap(h, value);
      else if (key.starts_with("setting:"))
        h.allocator_settings[key.substr(8)] = value;
    }
    memreplay::LiveRecorderOptions live;
    if (options != nullptr) {
      if (options->events_per_chunk) live.events_per_chunk = options->events_per_chunk;
      if (options->flush_interval_ms) live.flush_interval = std::chrono::milliseconds(options->flush_interval_ms);
      if (options->thread_buffer_events) live.thread_buffer_events = options->thread_buffer_events;
    }
    return new memreplay_recorder(path ? path : "", h, live);
  } catch (const std::exception& e) {
    set_error(error, error_size, e.what());
  } catch (...) {
    set_error(error, error_size, "unknown error");
  }
  return nullptr;
}

int memreplay_record(memreplay_recorder* r, uint32_t kind, uint32_t device, uint64_t stream, uint64_t address,
                     uint64_t size, uint32_t flags, uint64_t aux, uint64_t context) {
  return memreplay_record_in_pool(r, kind, device, stream, address, size, flags, aux, context, 0);
}

int memreplay_record_in_pool(memreplay_recorder* r, uint32_t kind, uint32_t device, uint64_t stream, uint64_t address,
                             uint64_t size, uint32_t flags, uint64_t aux, uint64_t context, uint32_t pool) {
  if (r == nullptr || !memreplay::is_valid_event_kind(kind) || pool > 0xffff ||
      kind == static_cast<uint32_t>(memreplay::EventKind::annotation))
    return 0;
  memreplay::Event e;
  e.kind = static_cast<memreplay::EventKind>(kind);
  e.pool = static_cast<uint16_t>(pool);
  e.device = device;
  e.stream = stream;
  e.address = address;
  e.size = size;
  e.flags = flags;
  e.aux = aux;
  return r->recorder.record(e, context) ? 1 : 0;
}

int memreplay_annotate(memreplay_recorder* r, uint32_t device, const char* const* keys_values, size_t pairs) {
  if (r == nullptr) return 0;
  try {
    memreplay::KeyValues kv;
    for (size_t i = 0; i < pairs; ++i)
      kv.emplace_back(keys_values[2 * i] ? keys_values[2 * i] : "",
                      keys_values[2 * i + 1] ? keys_values[2 * i + 1] : "");
    return r->recorder.annotate(device, std::move(kv)) ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

void memreplay_set_resolver(memreplay_recorder* r, memreplay_resolve_fn resolve, memreplay_discard_fn discard,
                            void* user) {
  if (r == nullptr || resolve == nullptr) return;
  r->resolver = std::make_unique<CResolver>(resolve, discard, user);
  r->recorder.set_context_resolver(r->resolver.get());
}

int memreplay_flush(memreplay_recorder* r) {
  try {
    return r != nullptr && r->recorder.flush() ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

void memreplay_get_stats(memreplay_recorder* r, memreplay_stats* stats) {
  if (r == nullptr || stats == nullptr) return;
  const memreplay::LiveRecorderStats s = r->recorder.stats();
  *stats = {s.recorded, s.written, s.dropped, s.failed ? 1 : 0};
}

int memreplay_close(memreplay_recorder* r, memreplay_stats* stats) {
  if (r == nullptr) return 0;
  r->recorder.close();
  memreplay_get_stats(r, stats);
  return r->recorder.stats().failed ? 0 : 1;
}

void memreplay_destroy(memreplay_recorder* r) { delete r; }

uint64_t memreplay_now_ns(void) { return LiveRecorder::now_ns(); }

uint32_t memreplay_format_version(uint32_t* minor) {
  if (minor != nullptr) *minor = memreplay::format::kFormatMinor;
  return memreplay::format::kFormatMajor;
}

uint32_t memreplay_event_kind(const char* name) {
  if (name == nullptr) return 0;
  const auto kind = memreplay::event_kind_from_name(name);
  return kind ? static_cast<uint32_t>(*kind) : 0;
}

uint32_t memreplay_event_flag(const char* name) {
  if (name == nullptr) return 0;
  const auto flag = memreplay::event_flag_from_name(name);
  return flag ? static_cast<uint32_t>(*flag) : 0;
}

}  // extern "C"
