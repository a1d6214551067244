// The one event vocabulary of memreplay: PyTorch's trace actions plus what CUDA-level capture sees.
// Recorders produce these, the trace file stores them (proto/trace.proto), replay consumes them.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace memreplay {

// Numbering is part of the file format: append new kinds, never renumber.
enum class EventKind : uint8_t {
  alloc = 1,  // block handed to the application; size = requested bytes
  free_requested = 2,  // application released the block (may still be in use by other streams)
  free_completed = 3,  // block returned to the allocator: reusable from now on
  segment_alloc = 4,  // cudaMalloc of a segment; size = segment bytes
  segment_free = 5,  // cudaFree of a segment
  segment_map = 6,  // pages mapped into an expandable segment; size = mapped bytes
  segment_unmap = 7,  // pages unmapped
  snapshot = 8,  // PyTorch took a snapshot; size = active bytes then
  oom = 9,  // allocation failed; size = bytes asked for, aux = device free bytes
  empty_cache = 10,  // torch.cuda.empty_cache() (explicit or inferred from the trace)
  annotation = 11,  // user marker; aux = index into the chunk's annotations
  stream_create = 12,  // stream = the new stream
  stream_destroy = 13,
  event_record = 14,  // aux = CUDA event handle, stream = where it was recorded
  stream_wait_event = 15,  // stream waits for the event in aux
  synchronize = 16,  // stream, event or device synchronize (stream 0 + aux 0 = device)
  // Driver virtual memory management as the CUDA interposer sees it (cuMemAddressReserve,
  // cuMemCreate, ...): address ranges and physical allocations are separate resources there.
  // segment_map/segment_unmap are cuMemMap/cuMemUnmap (aux = the physical handle for a map).
  address_reserve = 17,  // virtual address range reserved; address, size = bytes
  address_free = 18,  // virtual address range released; address, size
  physical_alloc = 19,  // physical memory created; size = bytes, aux = allocation handle
  physical_free = 20,  // physical memory released; aux = allocation handle, size when known
};
inline constexpr int kEventKindCount = 21;  // one past the largest value

// Bit flags on an event.
enum EventFlag : uint32_t {
  // Rebuilt state of an allocator that was already running when the trace starts: a
  // segment_alloc or alloc that happened before the first recorded entry. For such an alloc,
  // aux holds the block's size in the allocator (rounded bytes).
  kPreexisting = 1u << 0,
  // The recorded call failed (interposer: return code in aux).
  kFailed = 1u << 1,
  // The event was inferred by an importer rather than recorded (e.g. empty_cache).
  kInferred = 1u << 2,
  // An alloc made while its stream was capturing a CUDA graph (live recorder; the header's
  // captures_flagged says whether the trace sets it at all).
  kCaptured = 1u << 3,
};

// Pool ids: 0 is the allocator's default pool; a private pool (a CUDA graph's, a
// torch.cuda.MemPool) gets a small id of its own, named in the header's pool table.
inline constexpr uint16_t kDefaultPool = 0;

struct Event {
  EventKind kind = EventKind::alloc;
  // The pool of an alloc or segment event (kDefaultPool for every other kind). Fits the padding
  // after `kind`, so an Event stays 56 bytes.
  uint16_t pool = kDefaultPool;
  uint32_t device = 0;
  uint64_t time_ns = 0;
  uint64_t stream = 0;  // raw stream handle as the program saw it; 0 = legacy default stream
  uint64_t address = 0;
  uint64_t size = 0;  // requested bytes (see EventKind for the others)
  uint32_t stack = 0;  // stack id, 0 = none
  uint32_t flags = 0;  // EventFlag bits
  uint64_t aux = 0;  // kind-specific

  bool has_flag(EventFlag f) const { return (flags & f) != 0; }
  friend bool operator==(const Event&, const Event&) = default;
};

// PyTorch's action name for a kind where one exists ("alloc", "segment_map", ...), else our own.
std::string_view event_kind_name(EventKind kind);
std::optional<EventKind> event_kind_from_name(std::string_view name);
bool is_valid_event_kind(uint32_t value);
// An EventFlag by its name: "preexisting", "failed", "inferred", "captured".
std::optional<EventFlag> event_flag_from_name(std::string_view name);

}  // namespace memreplay
