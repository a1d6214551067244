#include "recorder/import/pytorch/empty_cache_inference.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string_view>

namespace memreplay {
namespace {

bool is_release(EventKind k) { return k == EventKind::segment_free || k == EventKind::segment_unmap; }

// Live-block count per cudaMalloc segment, and its pool. Expandable ranges are left out: rule 1 is
// about cudaMalloc segments only.
class Occupancy {
 public:
  explicit Occupancy(const AllocatorState& initial) {
    for (const SegmentState& s : initial.segments)
      if (!s.expandable) segments_[s.address] = {s.size, 0, s.pool};
    for (const BlockState& b : initial.blocks) adjust(b.address, +1);
  }

  // `pool`: the pool of `e` (pool_assignment.h).
  void apply(const TraceStep& e, uint16_t pool) {
    switch (e.kind) {
      case EventKind::segment_alloc: segments_[e.address] = {e.size, 0, pool}; break;
      case EventKind::segment_free: segments_.erase(e.address); break;
      case EventKind::alloc: adjust(e.address, +1); break;
      case EventKind::free_completed: adjust(e.address, -1); break;
      default: break;
    }
  }

  // True when every entirely free segment of the default pool is among the segment_free entries of
  // `run`. A private pool's free segments stay while its graphs or MemPool are alive (empty_cache
  // releases them only once the pool is released), so they neither confirm nor refute the run.
  bool run_releases_all_free(std::span<const TraceStep> run) const {
    std::vector<uint64_t> released;
    for (const TraceStep& e : run)
      if (e.kind == EventKind::segment_free) released.push_back(e.address);
    std::sort(released.begin(), released.end());
    for (const auto& [address, seg] : segments_)
      if (seg.live == 0 && seg.pool == kDefaultPool && !std::binary_search(released.begin(), released.end(), address))
        return false;
    return true;
  }

 private:
  struct Segment {
    uint64_t size;
    int64_t live;
    uint16_t pool;
  };

  void adjust(uint64_t address, int delta) {
    auto it = segments_.upper_bound(address);
    if (it == segments_.begin()) return;
    --it;
    if (address >= it->first + it->second.size) return;  // not in a cudaMalloc segment
    it->second.live = std::max<int64_t>(0, it->second.live + delta);
  }

  std::map<uint64_t, Segment> segments_;
};

// Whether an `oom` entry comes at or after an entry before the next `alloc`, asked of ascending
// entries: the scan resumes where the last one stopped, so a trace with many release runs stays
// linear, and no column per entry is needed.
class OomAhead {
 public:
  explicit OomAhead(std::span<const TraceStep> trace) : trace_(trace) {}
  bool at(size_t from) {
    if (!scanned_ || from > stop_) {  // else the first alloc or oom at or after `from` is stop_ still
      stop_ = from;
      while (stop_ < trace_.size() && trace_[stop_].kind != EventKind::alloc && trace_[stop_].kind != EventKind::oom)
        ++stop_;
      scanned_ = true;
    }
    return stop_ < trace_.size() && trace_[stop_].kind == EventKind::oom;
  }
  // The first alloc or oom at or after the last `from` asked of at(), or the trace's size.
  size_t stop() const { return stop_; }

 private:
  std::span<const TraceStep> trace_;
  size_t stop_ = 0;  // the first alloc or oom at or after the last `from` (or the end)
  bool scanned_ = false;
};

bool is_growth(EventKind k) { return k == EventKind::segment_alloc || k == EventKind::segment_map; }

// Reserved bytes (cudaMalloc'd + mapped) as entries are applied one by one: kept as a running
// sum, not a column, so that a trace of millions of entries costs no memory for it.
struct ReservedBytes {
  uint64_t now = 0;
  void apply(const TraceStep& e) {
    if (is_growth(e.kind))
      now += e.size;
    else if (is_release(e.kind))
      now -= std::min(now, e.size);
  }
};
ReservedBytes initial_reserved(const AllocatorState& initial) {
  ReservedBytes r;
  for (const SegmentState& s : initial.segments) r.now += s.size;
  return r;
}
// The highest reserved bytes over the trace.
uint64_t reserved_peak(const AllocatorState& initial, std::span<const TraceStep> trace, const TraceWindowDone& done) {
  ReservedBytes r = initial_reserved(initial);
  uint64_t peak = r.now;
  TraceWindows windows(done, trace.size());
  for (size_t i = 0; i < trace.size(); ++i) {
    windows.forward(i);
    r.apply(trace[i]);
    peak = std::max(peak, r.now);
  }
  return peak;
}

bool has_release(std::span<const TraceStep> trace, const TraceWindowDone& done) {
  TraceWindows windows(done, trace.size());
  for (size_t i = 0; i < trace.size(); ++i) {
    windows.forward(i);
    if (is_release(trace[i].kind)) return true;
  }
  return false;
}

// Rule 0: what the run's recorded stacks say, if anything (true: an empty_cache; false: a release
// inside the next allocation).
std::optional<bool> stacks_say(const EntryStacks& stacks, std::span<const TraceStep> trace, size_t begin, size_t end) {
  const uint32_t first = stacks.of_entry(begin);
  if (first == 0) return std::nullopt;
  if (stacks.calls_empty_cache(first)) return true;
  size_t next_alloc = end;
  while (next_alloc < trace.size() && trace[next_alloc].kind != EventKind::alloc) ++next_alloc;
  if (next_alloc == trace.size() || stacks.of_entry(next_alloc) != first) return std::nullopt;
  for (size_t i = begin; i < end; ++i)
    if (stacks.of_entry(i) != first) return std::nullopt;
  return false;
}

}  // namespace

bool is_empty_cache_stack(std::span<const FrameText> frames) {
  constexpr std::string_view kFile = "torch/cuda/memory.py";
  return std::any_of(frames.begin(), frames.end(), [&](const FrameText& f) {
    return f.name == "empty_cache" && f.filename.size() >= kFile.size() &&
           std::string_view(f.filename).substr(f.filename.size() - kFile.size()) == kFile;
  });
}

std::vector<ReleaseRun> infer_empty_cache(const AllocatorState& initial, std::span<const TraceStep> trace,
                                          const EntryStacks* stacks, const TraceWindowDone& done,
                                          std::span<const uint16_t> pools) {
  std::vector<ReleaseRun> found;
  // Occupancy tracking costs a map lookup per alloc/free: skip it for the many traces that
  // never release a segment.
  if (!has_release(trace, done)) return found;
  Occupancy occupancy(initial);
  OomAhead oom_ahead(trace);
  const uint64_t peak = reserved_peak(initial, trace, done);
  ReservedBytes reserved = initial_reserved(initial);  // before entry i
  const auto pool_of = [&](size_t i) { return pools.empty() ? kDefaultPool : pools[i]; };
  std::set<uint16_t> grown_pools;  // the private pools that have had a segment so far (a few)
  TraceWindows windows(done, trace.size());
  for (size_t i = 0; i < trace.size();) {
    windows.forward(i);
    if (!is_release(trace[i].kind)) {
      reserved.apply(trace[i]);
      occupancy.apply(trace[i], pool_of(i));
      if (is_growth(trace[i].kind) && pool_of(i) != kDefaultPool) grown_pools.insert(pool_of(i));
      ++i;
      continue;
    }
    size_t end = i;
    while (end < trace.size() && is_release(trace[end].kind)) ++end;
    const std::span<const TraceStep> run = trace.subspan(i, end - i);
    // Rule 3: release-and-retry. The run is followed by the device allocation it made room for,
    // one that would have taken reserved memory past the highest it ever reached: only a cap
    // (set_per_process_memory_fraction) stops an allocator there, and it then releases and retries.
    // A run right after a free is taken for an empty_cache all the same (see the header).
    const bool after_free =
        i > 0 && (trace[i - 1].kind == EventKind::free_completed || trace[i - 1].kind == EventKind::free_requested);
    const bool grows = end < trace.size() && is_growth(trace[end].kind);
    // torch.cuda.graph() empties the cache right before its capture begins, so a run followed at
    // once by the first segment of a private pool opens a capture: its empty_cache, not a retry.
    const bool opens_capture = grows && pool_of(end) != kDefaultPool && !grown_pools.contains(pool_of(end));
    const bool retry = !after_free && !opens_capture && grows && reserved.now + trace[end].size > peak;
    const std::optional<bool> said = stacks ? stacks_say(*stacks, trace, i, end) : std::nullopt;
    if (said) {
      if (*said) found.push_back({.first = i});
    } else if (occupancy.run_releases_all_free(run) && !oom_ahead.at(end)) {
      // Rules 1 and 2 hold: an empty_cache, unless the device allocation that follows is a retry's.
      const bool open = grows && !opens_capture && oom_ahead.stop() < trace.size();
      if (open || !retry)
        found.push_back(
            {.first = i, .empty_cache = !retry, .next_alloc = open ? oom_ahead.stop() : ReleaseRun::kSettled});
    }
    for (size_t k = i; k < end; ++k) {
      reserved.apply(trace[k]);
      occupancy.apply(trace[k], pool_of(k));
    }
    i = end;
  }
  return found;
}

}  // namespace memreplay
