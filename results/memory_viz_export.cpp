#include "results/memory_viz_export.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "proto/input_error.h"
#include "proto/trace_reader.h"
#include "results/pickle_writer.h"
#include "results/replayed_segments.h"

namespace memreplay::results {
namespace {

struct Segment {
  uint64_t size = 0;
  uint64_t stream = 0;
  bool expandable = false;
  uint32_t stack = 0;
  uint16_t pool = kDefaultPool;
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
  // `replayed`: the events come from a SegmentReplay, each alloc's aux its block size.
  SnapshotBuilder(TraceReader& reader, uint32_t device, bool replayed)
      : reader_(reader), device_(device), replayed_(replayed) {}

  void add(const Event& e) {
    if (e.device != device_) return;
    const bool preexisting = e.has_flag(kPreexisting);
    switch (e.kind) {
      case EventKind::alloc:
        blocks_[e.address] = {e.size, (preexisting || replayed_) && e.aux != 0 ? e.aux : round_512(e.size), e.stream,
                              e.stack, false};
        break;
      case EventKind::free_requested:
        if (auto it = blocks_.find(e.address); it != blocks_.end()) it->second.free_requested = true;
        break;
      case EventKind::free_completed: blocks_.erase(e.address); break;
      case EventKind::segment_alloc:
        segments_[e.address] = {e.size, e.stream, false, e.stack, e.pool};
        ++segment_events_;
        break;
      case EventKind::segment_free:
        segments_.erase(e.address);
        ++segment_events_;
        break;
      case EventKind::segment_map:
        map_range(e.address, e.size, e.stream, e.pool);
        ++segment_events_;
        break;
      case EventKind::segment_unmap:
        unmap_range(e.address, e.size);
        ++segment_events_;
        break;
      case EventKind::oom:
      case EventKind::snapshot: break;
      case EventKind::annotation: add_annotation(e); return;
      default: return;  // not an action of PyTorch's trace
    }
    if (!preexisting) entries_.push_back(e);
  }

  MemoryVizExport finish() {
    if (segment_events_ == 0 && !entries_.empty() && !replayed_)
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
    if (!external_.empty()) {
      w.text("external_annotations");
      write_external_annotations(w);
    }
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
  void map_range(uint64_t address, uint64_t size, uint64_t stream, uint16_t pool) {
    segments_[address] = {size, stream, true, 0, pool};
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
      if (start < address) kept[start] = {address - start, s.stream, true, 0, s.pool};
      if (end > address + size) kept[address + size] = {end - address - size, s.stream, true, 0, s.pool};
    }
    segments_ = std::move(kept);
  }
  void merge_expandable() {
    std::map<uint64_t, Segment> merged;
    for (const auto& [start, s] : segments_) {
      if (s.expandable && !merged.empty()) {
        auto& [last_start, last] = *merged.rbegin();
        if (last.expandable && last_start + last.size == start && last.stream == s.stream && last.pool == s.pool) {
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
        text_field(w, "filename", f.filename);
        w.name("line");
        w.integer(f.line);
        text_field(w, "name", f.name);
        w.end_dict();
      }
    w.end_list();
    frame_slots_[stack] = w.remember();
  }

  static void text_field(PickleWriter& w, const char* key, std::string_view value) {
    w.name(key);
    w.text(value);
  }
  static void number_field(PickleWriter& w, const char* key, uint64_t value) {
    w.name(key);
    w.unsigned_integer(value);
  }
  // A stream as PyTorch writes it: a signed 64-bit handle (the importer keeps a snapshot's -1 as
  // 2^64 - 1), so that the export imports back to the same stream.
  static void stream_field(PickleWriter& w, uint64_t stream) {
    w.name("stream");
    w.integer(static_cast<int64_t>(stream));
  }

  void write_entry(PickleWriter& w, const Event& e) {
    w.begin_dict();
    w.name("action");
    w.name(e.kind == EventKind::annotation ? "user_defined" : event_kind_name(e.kind));
    number_field(w, "addr", e.address);
    number_field(w, "size", e.size);
    stream_field(w, e.stream);
    number_field(w, "time_us", e.time_ns / 1000);
    w.name("frames");
    write_frames(w, e.stack);
    if (e.kind == EventKind::oom) number_field(w, "device_free", e.aux);
    if (e.kind == EventKind::annotation) text_field(w, "user_metadata", annotations_[e.aux].front().second);
    w.end_dict();
  }

  // PyTorch has two kinds of marker: a trace entry "user_defined" (record_memory_history's
  // user_metadata; our importer keeps it as the one key "user_metadata") and the snapshot's
  // "external_annotations" (device, time_us and any other keys, e.g. stage and name).
  void add_annotation(const Event& e) {
    const KeyValues& metadata = reader_.annotation(e);
    Event kept = e;
    kept.aux = annotations_.size();
    annotations_.push_back(metadata);
    const bool user_defined = metadata.size() == 1 && metadata.front().first == "user_metadata";
    (user_defined ? entries_ : external_).push_back(kept);
  }

  void write_external_annotations(PickleWriter& w) {
    w.begin_list();
    for (const Event& e : external_) {
      w.begin_dict();
      number_field(w, "device", e.device);
      number_field(w, "time_us", e.time_ns / 1000);
      for (const auto& [key, value] : annotations_[e.aux]) text_field(w, key.c_str(), value);
      w.end_dict();
    }
    w.end_list();
  }

  // PyTorch's MempoolId_t of a pool: (0, 0) for the default pool, the header's pair for a named
  // private pool, (0, id) for one the header does not name (live traces name pools in annotations).
  std::pair<uint64_t, uint64_t> torch_pool_id(uint16_t pool) const {
    if (pool == kDefaultPool) return {0, 0};
    for (const auto& p : reader_.header().pools())
      if (p.id() == pool) return {p.torch_id_first(), p.torch_id_second()};
    return {0, pool};
  }

  void write_block(PickleWriter& w, uint64_t address, uint64_t size, uint64_t requested, const char* state,
                   uint32_t stack) {
    w.begin_dict();
    number_field(w, "address", address);
    number_field(w, "size", size);
    number_field(w, "requested_size", requested);
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
      number_field(w, "device", device_);
      number_field(w, "address", start);
      number_field(w, "total_size", s.size);
      number_field(w, "allocated_size", allocated);
      number_field(w, "active_size", active);
      number_field(w, "requested_size", requested);
      stream_field(w, s.stream);
      w.name("segment_type");
      w.name(s.size <= (2u << 20) && !s.expandable ? "small" : "large");
      w.name("segment_pool_id");
      const auto [pool_first, pool_second] = torch_pool_id(s.pool);
      w.begin_tuple();
      w.unsigned_integer(pool_first);
      w.unsigned_integer(pool_second);
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
  bool replayed_;
  std::map<uint64_t, Segment> segments_;
  std::map<uint64_t, LiveBlock> blocks_;
  std::vector<Event> entries_;
  std::vector<Event> external_;  // annotations written as external_annotations
  std::vector<KeyValues> annotations_;  // the metadata of each annotation kept, by its aux
  uint64_t segment_events_ = 0;
  std::unordered_map<uint32_t, uint32_t> frame_slots_;
};

bool has_segment_events(TraceReader& reader) {
  constexpr EventKind kinds[] = {EventKind::segment_alloc, EventKind::segment_free, EventKind::segment_map,
                                 EventKind::segment_unmap};
  if (const auto* footer = reader.footer()) {
    for (const EventKind k : kinds)
      if (const auto it = footer->events_per_kind().find(static_cast<uint32_t>(k));
          it != footer->events_per_kind().end() && it->second > 0)
        return true;
    return false;
  }
  TraceReader scan(reader.path());  // no footer to count them: look
  std::vector<Event> batch;
  while (scan.next_batch(batch))
    for (const Event& e : batch)
      if (std::find(std::begin(kinds), std::end(kinds), e.kind) != std::end(kinds)) return true;
  return false;
}

}  // namespace

MemoryVizExport export_memory_viz(const std::string& trace_path, uint32_t trace_device,
                                  const std::string& segment_policy) {
  TraceReader reader(trace_path);
  const bool replayed = !has_segment_events(reader);
  SnapshotBuilder builder(reader, trace_device, replayed);
  std::vector<Event> batch;
  if (!replayed) {
    while (reader.next_batch(batch))
      for (const auto& e : batch) builder.add(e);
    return builder.finish();
  }
  ReplayOptions options;
  options.trace_path = trace_path;
  options.trace_device = trace_device;
  options.policy_spec = segment_policy;
  SegmentReplay replay(reader, options);
  std::vector<Event> laid_out;
  uint64_t index = 0;
  bool running = true;
  while (running && reader.next_batch(batch)) {
    for (size_t i = 0; i < batch.size() && running; ++i) {
      laid_out.clear();
      running = replay.feed(batch[i], index + i, laid_out);
      for (const Event& e : laid_out) builder.add(e);
    }
    index += batch.size();
  }
  if (!running)
    throw InputError(trace_path + ": the replay under " + segment_policy +
                     " that lays out its segments ran out of memory; no snapshot written");
  MemoryVizExport out = builder.finish();
  out.segments_replayed_under = segment_policy;
  return out;
}

}  // namespace memreplay::results
