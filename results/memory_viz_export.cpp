#include "results/memory_viz_export.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <vector>

#include "proto/input_error.h"
#include "proto/trace_reader.h"
#include "results/pickle_writer.h"

namespace memreplay::results {
namespace {

struct Segment {
  uint64_t size = 0;
  uint64_t stream = 0;
  bool expandable = false;
  uint32_t stack = 0;
};

struct LiveBlock {
  uint64_t requested = 0;
  uint64_t rounded = 0;  // the allocator's block size when the trace knows it, else requested rounded to 512
  uint64_t stream = 0;
  uint32_t stack = 0;
  bool free_requested = false;
};

uint64_t round_512(uint64_t bytes) { return bytes < 512 ? 512 : (bytes + 511) / 512 * 512; }

class SnapshotBuilder {
 public:
  SnapshotBuilder(TraceReader& reader, uint32_t device) : reader_(reader), device_(device) {}

  void add(const Event& e) {
    if (e.device != device_) return;
    const bool preexisting = e.has_flag(kPreexisting);
    switch (e.kind) {
      case EventKind::alloc:
        blocks_[e.address] = {e.size, preexisting && e.aux != 0 ? e.aux : round_512(e.size), e.stream, e.stack, false};
        break;
      case EventKind::free_requested:
        if (auto it = blocks_.find(e.address); it != blocks_.end()) it->second.free_requested = true;
        break;
      case EventKind::free_completed:
        blocks_.erase(e.address);
        break;
      case EventKind::segment_alloc:
        segments_[e.address] = {e.size, e.stream, false, e.stack};
        ++segment_events_;
        break;
      case EventKind::segment_free:
        segments_.erase(e.address);
        ++segment_events_;
        break;
      case EventKind::segment_map:
        map_range(e.address, e.size, e.stream);
        ++segment_events_;
        break;
      case EventKind::segment_unmap:
        unmap_range(e.address, e.size);
        ++segment_events_;
        break;
      case EventKind::oom:
      case EventKind::snapshot:
        break;
      default:
        return;  // not an action of PyTorch's trace
    }
    if (!preexisting) entries_.push_back(e);
  }

  MemoryVizExport finish() {
    if (segment_events_ == 0 && !entries_.empty())
      throw InputError(reader_.path() +
                       ": the trace has no segment events (cudaMalloc'd segments), which a memory snapshot needs; "
                       "export a trace imported from a PyTorch snapshot or recorded with memreplay.torch");
    merge_expandable();
    PickleWriter w;
    w.begin_dict();
    w.text("segments");
    write_segments(w);
    w.text("device_traces");
    w.begin_list();
    for (uint32_t d = 0; d < device_; ++d) {
      w.begin_list();
      w.end_list();
    }
    w.begin_list();
    for (const Event& e : entries_) write_entry(w, e);
    w.end_list();
    w.end_list();
    w.text("allocator_settings");
    w.begin_dict();
    for (const auto& [key, value] : reader_.header().allocator_settings()) {
      w.text(key);
      w.text(value);
    }
    w.end_dict();
    w.end_dict();
    return {w.finish(), entries_.size(), segments_.size()};
  }

 private:
  void map_range(uint64_t address, uint64_t size, uint64_t stream) {
    segments_[address] = {size, stream, true, 0};
  }
  void unmap_range(uint64_t address, uint64_t size) {
    // Cut [address, address+size) out of the mapped ranges it falls in.
    std::map<uint64_t, Segment> kept;
    for (auto& [start, s] : segments_) {
      const uint64_t end = start + s.size;
      if (!s.expandable || end <= address || start >= address + size) {
        kept[start] = s;
        continue;
      }
      if (start < address) kept[start] = {address - start, s.stream, true, 0};
      if (end > address + size) kept[address + size] = {end - address - size, s.stream, true, 0};
    }
    segments_ = std::move(kept);
  }
  void merge_expandable() {
    std::map<uint64_t, Segment> merged;
    for (const auto& [start, s] : segments_) {
      if (s.expandable && !merged.empty()) {
        auto& [last_start, last] = *merged.rbegin();
        if (last.expandable && last_start + last.size == start && last.stream == s.stream) {
          last.size += s.size;
          continue;
        }
      }
      merged[start] = s;
    }
    segments_ = std::move(merged);
  }

  void write_frames(PickleWriter& w, uint32_t stack) {
    if (const auto it = frame_slots_.find(stack); it != frame_slots_.end()) return w.recall(it->second);
    w.begin_list();
    if (stack != 0)
      for (const auto& f : reader_.stack_frames(stack)) {
        w.begin_dict();
        w.name("filename");
        w.text(f.filename);
        w.name("line");
        w.integer(f.line);
        w.name("name");
        w.text(f.name);
        w.end_dict();
      }
    w.end_list();
    frame_slots_[stack] = w.remember();
  }

  void write_entry(PickleWriter& w, const Event& e) {
    w.begin_dict();
    w.name("action");
    w.name(event_kind_name(e.kind));
    w.name("addr");
    w.unsigned_integer(e.address);
    w.name("size");
    w.unsigned_integer(e.size);
    w.name("stream");
    w.unsigned_integer(e.stream);
    w.name("time_us");
    w.unsigned_integer(e.time_ns / 1000);
    w.name("frames");
    write_frames(w, e.stack);
    if (e.kind == EventKind::oom) {
      w.name("device_free");
      w.unsigned_integer(e.aux);
    }
    w.end_dict();
  }

  void write_block(PickleWriter& w, uint64_t address, uint64_t size, uint64_t requested, const char* state,
                   uint32_t stack) {
    w.begin_dict();
    w.name("address");
    w.unsigned_integer(address);
    w.name("size");
    w.unsigned_integer(size);
    w.name("requested_size");
    w.unsigned_integer(requested);
    w.name("state");
    w.name(state);
    w.name("frames");
    write_frames(w, stack);
    w.end_dict();
  }

  void write_segments(PickleWriter& w) {
    w.begin_list();
    for (const auto& [start, s] : segments_) {
      const uint64_t end = start + s.size;
      uint64_t allocated = 0, requested = 0, active = 0;
      struct Piece {
        uint64_t address, size, requested;
        const char* state;
        uint32_t stack;
      };
      std::vector<Piece> pieces;
      uint64_t cursor = start;
      for (auto it = blocks_.lower_bound(start); it != blocks_.end() && it->first < end; ++it) {
        const auto next = std::next(it);
        const uint64_t limit = std::min(end, next != blocks_.end() ? next->first : end);
        const uint64_t size = std::min(it->second.rounded, limit - it->first);
        if (it->first > cursor) pieces.push_back({cursor, it->first - cursor, 0, "inactive", 0});
        const bool pending = it->second.free_requested;
        pieces.push_back({it->first, size, std::min(it->second.requested, size),
                          pending ? "active_pending_free" : "active_allocated", it->second.stack});
        allocated += size;
        requested += std::min(it->second.requested, size);
        if (!pending) active += size;
        cursor = it->first + size;
      }
      if (cursor < end) pieces.push_back({cursor, end - cursor, 0, "inactive", 0});

      w.begin_dict();
      const auto key = [&](const char* k, uint64_t v) {
        w.name(k);
        w.unsigned_integer(v);
      };
      key("device", device_);
      key("address", start);
      key("total_size", s.size);
      key("allocated_size", allocated);
      key("active_size", active);
      key("requested_size", requested);
      key("stream", s.stream);
      w.name("segment_type");
      w.name(s.size <= (2u << 20) && !s.expandable ? "small" : "large");
      w.name("segment_pool_id");
      w.begin_tuple();
      w.integer(0);
      w.integer(0);
      w.end_tuple();
      w.name("is_expandable");
      w.boolean(s.expandable);
      w.name("frames");
      write_frames(w, s.stack);
      w.name("blocks");
      w.begin_list();
      for (const auto& p : pieces) write_block(w, p.address, p.size, p.requested, p.state, p.stack);
      w.end_list();
      w.end_dict();
    }
    w.end_list();
  }

  TraceReader& reader_;
  uint32_t device_;
  std::map<uint64_t, Segment> segments_;
  std::map<uint64_t, LiveBlock> blocks_;
  std::vector<Event> entries_;
  uint64_t segment_events_ = 0;
  std::unordered_map<uint32_t, uint32_t> frame_slots_;
};

}  // namespace

MemoryVizExport export_memory_viz(const std::string& trace_path, uint32_t trace_device) {
  TraceReader reader(trace_path);
  SnapshotBuilder builder(reader, trace_device);
  std::vector<Event> batch;
  while (reader.next_batch(batch))
    for (const auto& e : batch) builder.add(e);
  return builder.finish();
}

}  // namespace memreplay::results
