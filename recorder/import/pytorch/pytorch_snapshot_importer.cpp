#include "recorder/import/pytorch/pytorch_snapshot_importer.h"

#include <algorithm>
#include <optional>
#include <unordered_set>

#include "proto/input_error.h"
#include "recorder/import/input/decompress.h"
#include "recorder/import/pytorch/allocator_state.h"
#include "recorder/import/pytorch/chunks_ahead.h"
#include "recorder/import/pytorch/empty_cache_inference.h"
#include "recorder/import/pytorch/entry_event.h"
#include "recorder/import/pytorch/pool_assignment.h"
#include "recorder/import/pytorch/snapshot_reader.h"
#include "recorder/import/unpickler/pickle_reader.h"

namespace memreplay {
namespace {

// The output stage: what the reading left (snapshot_reader.h) goes through the state passes
// (initial state, pools, empty_cache inference) and out to the sink, the devices merged by time;
// or, where the passes find nothing to add, the chunk rows encoded while reading (chunks_ahead.h).
class SnapshotOutput {
 public:
  explicit SnapshotOutput(SnapshotContent& content) : c_(content) {}

  // `ahead`: null where the sink takes no encoded chunks.
  void run(TraceSink& sink, ChunksAhead* ahead) {
    std::vector<AllocatorState> initial(c_.devices.size());
    pools_.resize(c_.devices.size());
    bool starts_mid_run = false;
    for (size_t d = 0; d < c_.devices.size(); ++d) {
      const StepSpool& spool = c_.devices[d].spool;
      // The passes hand back the pages of the entries they are done with (TraceWindowDone).
      const TraceWindowDone done = [&](size_t begin, size_t end) { spool.release(begin, end); };
      initial[d] = rebuild_initial_state(c_.devices[d].final_state, spool.steps(), done);
      spool.release_all();
      starts_mid_run |= !initial[d].empty();
      // The pool hook: each entry's pool, from the final segments' segment_pool_id (none to
      // store when every segment is in the default pool).
      const auto& segments = c_.devices[d].final_state.segments;
      if (std::any_of(segments.begin(), segments.end(), [](const SegmentState& s) { return s.pool != kDefaultPool; })) {
        PoolAssignmentCounts unknown;
        pools_[d] = assign_pools(c_.devices[d].final_state, spool.steps(), &unknown, done);
        proto::DeviceInfo& info = *c_.header.mutable_devices(static_cast<int>(d));
        info.set_segments_of_unknown_pool(unknown.segments_of_unknown_pool);
        info.set_allocations_of_unknown_pool(unknown.allocations_of_unknown_pool);
        spool.release_all();
      }
    }
    c_.header.set_starts_mid_run(starts_mid_run);
    c_.pool_ids.name_pools(c_.header);
    if (ahead != nullptr && wrote_ahead(sink, *ahead, initial)) return;

    sink.begin(c_.header);
    stack_ids_.reserve(c_.stacks.size());
    for (const auto& frames : c_.stacks) stack_ids_.push_back(sink.intern_stack(frames));
    for (size_t d = 0; d < c_.devices.size(); ++d) {
      const StepSpool& spool = c_.devices[d].spool;
      uint64_t start = spool.size() == 0 ? c_.header.capture_time_ns() : spool.time(0);
      // Annotations older than the first kept entry (a ring buffer drops entries, not
      // annotations) come after the rebuilt state: stamp that state no later than them, so that
      // time never goes backwards.
      if (!c_.devices[d].annotations.empty()) start = std::min(start, c_.devices[d].annotations.front().time_ns);
      for (Event e : preexisting_events(initial[d], static_cast<uint32_t>(d), start)) {
        e.stream = c_.streams.handle(e.stream);
        emit(sink, e);
      }
    }
    std::vector<DeviceCursor> cursors;
    cursors.reserve(c_.devices.size());
    for (size_t d = 0; d < c_.devices.size(); ++d)
      cursors.emplace_back(*this, static_cast<uint32_t>(d), release_runs(d, initial[d], stack_ids_));
    emit_merged(sink, cursors);
    sink.finish();
  }

 private:
  // Writes the rows encoded while reading, if they are what the events below would have made:
  // the entries of one device as they came, with nothing the passes add (state before the first
  // entry, pools, annotations, inferred empty_cache calls) and every entry and stack in them.
  bool wrote_ahead(TraceSink& sink, ChunksAhead& ahead, const std::vector<AllocatorState>& initial) {
    std::optional<ChunksAhead::Encoded> encoded = ahead.finish();
    if (!encoded || c_.devices.size() != 1 || !initial[0].empty() || !pools_[0].empty() ||
        !c_.devices[0].annotations.empty())
      return false;
    if (encoded->entries != c_.devices[0].spool.size() || encoded->sink_stacks.size() != c_.stacks.size()) return false;
    // An open run keeps its rule-3 reading here: a sink that settles runs takes no encoded chunks.
    const std::vector<ReleaseRun> runs = release_runs(0, initial[0], encoded->sink_stacks);
    if (std::any_of(runs.begin(), runs.end(), [](const ReleaseRun& r) { return r.empty_cache; })) return false;
    sink.write_encoded(c_.header, std::move(encoded->encoder), encoded->rows);
    sink.finish();
    return true;
  }

  // Device d's runs of releases an inferred empty_cache may go before (empty_cache_inference.h).
  // `sink_stacks`: local stack k is the sink's sink_stacks[k - 1] (stacks by content: equal frames
  // lists need not be one pickled object).
  std::vector<ReleaseRun> release_runs(size_t d, const AllocatorState& initial,
                                       const std::vector<uint32_t>& sink_stacks) const {
    std::unordered_set<uint32_t> empty_cache_stacks;  // sink ids of torch.cuda.empty_cache()'s stacks
    for (size_t k = 0; k < c_.stacks.size(); ++k)
      if (is_empty_cache_stack(c_.stacks[k])) empty_cache_stacks.insert(sink_stacks[k]);
    const StepSpool& spool = c_.devices[d].spool;
    const TraceWindowDone done = [&](size_t begin, size_t end) { spool.release(begin, end); };
    const EntryStacks stacks{[&](size_t i) { return spool.stack(i) == 0 ? 0 : sink_stacks[spool.stack(i) - 1]; },
                             [&](uint32_t id) { return empty_cache_stacks.contains(id); }};
    std::vector<ReleaseRun> runs =
        infer_empty_cache(initial, spool.steps(), c_.stacks.empty() ? nullptr : &stacks, done, pools_[d]);
    spool.release_all();
    return runs;
  }

  // Whether an empty_cache event goes before `run` of device d: its reading, unless the run is
  // open and `sink` settles it (TraceSink::burst_is_retry), asked when every event before the
  // run has gone to the sink.
  bool empty_cache_before(const ReleaseRun& run, uint32_t d, TraceSink& sink) const {
    if (!run.open()) return run.empty_cache;
    const std::optional<bool> retry = sink.burst_is_retry(trace_event(d, run.next_alloc));
    return retry ? !*retry : run.empty_cache;
  }

  // The Event of device d's trace entry i (its local stack id, which emit() maps).
  Event trace_event(uint32_t d, size_t i) const {
    const SnapshotDevice& dev = c_.devices[d];
    const TraceStep& step = dev.spool.steps()[i];
    return entry_event(step, d, dev.spool.time(i), c_.streams.handle(step.stream), dev.spool.stack(i),
                       pools_[d].empty() ? kDefaultPool : pools_[d][i]);
  }

  // Device d's events in order: its trace, with inferred empty_cache events before their release
  // runs and annotations after the trace events of the same or an earlier time.
  class DeviceCursor {
   public:
    DeviceCursor(const SnapshotOutput& output, uint32_t d, std::vector<ReleaseRun> runs)
        : output_(output), dev_(output.c_.devices[d]), d_(d), runs_(std::move(runs)) {}
    bool done() const { return next_ == dev_.spool.size() && annotation_ == dev_.annotations.size(); }
    uint64_t time() const {
      return annotation_first() ? dev_.annotations[annotation_].time_ns : dev_.spool.time(next_);
    }
    // The next event; `sink` has every event taken before it (a run's reading may ask it).
    Event take(TraceSink& sink) {
      if (annotation_first()) return dev_.annotations[annotation_++];
      if (run_ < runs_.size() && runs_[run_].first == next_ && output_.empty_cache_before(runs_[run_++], d_, sink)) {
        Event empty;
        empty.kind = EventKind::empty_cache;
        empty.device = d_;
        empty.time_ns = dev_.spool.time(next_);
        empty.flags = kInferred;
        return empty;
      }
      if (next_ % kReleaseEvery == 0 && next_ > 0) dev_.spool.release(next_ - kReleaseEvery, next_);
      return output_.trace_event(d_, next_++);
    }

   private:
    static constexpr size_t kReleaseEvery = size_t{1} << 16;
    bool annotation_first() const {
      return annotation_ < dev_.annotations.size() &&
             (next_ == dev_.spool.size() || dev_.annotations[annotation_].time_ns < dev_.spool.time(next_));
    }
    const SnapshotOutput& output_;
    const SnapshotDevice& dev_;
    uint32_t d_;
    std::vector<ReleaseRun> runs_;
    size_t next_ = 0, annotation_ = 0, run_ = 0;
  };

  // --- output ---

  // Merges the devices' events by time, stably: on equal times the lower device goes first.
  void emit_merged(TraceSink& sink, std::vector<DeviceCursor>& cursors) {
    if (cursors.size() == 1) {
      while (!cursors[0].done()) emit(sink, cursors[0].take(sink));
      return;
    }
    for (;;) {
      DeviceCursor* best = nullptr;
      for (DeviceCursor& c : cursors)
        if (!c.done() && (best == nullptr || c.time() < best->time())) best = &c;
      if (best == nullptr) return;
      emit(sink, best->take(sink));
    }
  }

  void emit(TraceSink& sink, Event e) {
    if (e.stack != 0) e.stack = stack_ids_[e.stack - 1];
    if (e.kind == EventKind::annotation) {
      const KeyValues& kv = c_.annotation_texts[e.aux];
      e.aux = annotations_emitted_++;
      sink.append_annotation(e, kv);
    } else {
      sink.append(e);
    }
  }
  SnapshotContent& c_;
  std::vector<std::vector<uint16_t>> pools_;  // each device's entries' pools; empty: all default
  std::vector<uint32_t> stack_ids_;  // local stack k is sink stack stack_ids_[k - 1]
  uint64_t annotations_emitted_ = 0;
};

}  // namespace

void write_snapshot_content(SnapshotContent& content, TraceSink& sink, ChunksAhead* ahead) {
  SnapshotOutput(content).run(sink, ahead);
}

void import_pytorch_snapshot_pickle(std::string_view pickle_bytes, const std::string& source_file, TraceSink& sink,
                                    const std::function<void(uint64_t)>& progress, const GrowingInput* growing) {
  // The rows encoded while reading, where the sink can take them.
  std::optional<ChunksAhead> ahead;
  if (const auto format = sink.encoded_chunk_format()) ahead.emplace(format->events_per_chunk, format->zstd_level);
  SnapshotReader reader(source_file, pickle_bytes.size(), growing, ahead ? &*ahead : nullptr);
  pickle::UnpickleOptions options;
  options.device_traces = &reader;
  options.growing = growing;
  options.progress = progress;
  const pickle::Tree tree = pickle::unpickle(pickle_bytes, source_file, options);
  // The rest of the stream decoded and checked (trailing data, checksums) before anything is written.
  if (growing != nullptr) growing->wait_for(UINT64_MAX);
  write_snapshot_content(reader.read(tree), sink, ahead ? &*ahead : nullptr);
}

void import_pytorch_snapshot_input(const InputBytes& input, const std::string& path, TraceSink& sink) {
  try {
    import_pytorch_snapshot_pickle(
        input.prefix(0), path, sink, [&](uint64_t offset) { input.release_before(offset); }, input.growing());
  } catch (const InputError&) {
    input.rethrow_decoding_error();
    throw;
  }
}

void import_pytorch_snapshot(const std::string& path, TraceSink& sink) {
  const InputBytes input(path);
  import_pytorch_snapshot_input(input, path, sink);
}

}  // namespace memreplay
