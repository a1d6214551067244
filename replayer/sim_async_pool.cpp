// Calibration of SimAsyncPool (H200, driver 580.159.04), against two references, in 32 MiB chunks:
//   live    max_memory_reserved (= ReservedMemHigh) of the live backend:cudaMallocAsync runs,
//           runs/WORKLOAD.asyncpool.json (PyTorch 2.11, with the model's GPU work in between);
//   replay  ReservedMemHigh of the real pool replaying the same trace with cuda_async on
//           CudaDevice (tools/gpu_check.sh, 2026-11-30: no GPU work, frees complete at once).
// "requested" is requested_bytes.all.peak of runs/WORKLOAD.default.json; it equals the live
// run's max_memory_allocated (= UsedMemHigh) to the byte in all five workloads, and the replay's
// UsedMemCurrent equals our sum of requested bytes (CudaDevice test): UsedMem is unrounded.
//
//   workload              requested (chunks)   live  replay  model  model-live  (before: model  model-live)
//   gpt2_generate          1,040,812,880 (31.0)   35     39     34    -32 MiB             33    -64 MiB
//   gpt2_train             7,701,353,160 (229.5) 248    258    248      0 MiB            247    -32 MiB
//   multistream_pipeline     468,402,176 (14.0)   15     17     15      0 MiB             16    +32 MiB
//   resnet50_train         3,192,592,912 (95.1)   97    100     98    +32 MiB             96    -32 MiB
//   vit_infer_varbatch     1,042,736,032 (31.1)   37     51     37      0 MiB             33   -128 MiB
// "model" is this model since issue 10: requests of 2 MiB or more rounded up to whole MiBs. Every
// workload is within one chunk (and 3%) of its live run; "before" is the model without that
// rounding (-11% to +7%).
//
// What the data fixed (every peak above is a whole number of 32 MiB; the replay's placements,
// dumped by the CudaPoolProbe test, show the rest): growth by 32 MiB chunks at the top of one
// address range, an allocation spanning chunks and extending the free memory at the top (a first
// request of 147.2 MiB reserves 160 MiB; a later 25.3 MiB one starts in the last chunk's free
// tail); 512-byte alignment (2,880 bytes take 3,072, 1 byte takes 512); placements in address
// order while nothing is freed.
// What it does not model: the driver reuses a block just freed on the same stream as it is (an
// exact-size block before a larger merged range) and merges freed neighbours only later, which
// leaves more fragments: the replay's peaks are 3% to 38% above the live ones and the model's.
// The live runs sit between the model and the replay because there the frees complete while the
// GPU works. Variants tried against the live peaks (chunk errors in the order above, sum |error|):
//     this model (best fit, 512-byte alignment):                             -2 -1 +1 -1 -4    (9)
//     first fit instead of best fit:                                         -2 -1  0  0 -4    (7)
//     1 MiB rounding of requests >= 1 MiB:                                   -1  0  0 +1 -3    (5)
//     requests < 1 MiB in chunks of their own:                               -1 -1 +2  0 +1    (5)
//     2 MiB rounding of requests >= 2 MiB:                                   +1 +6  0 +5 +2   (14)
//     each chunk on its own, requests > 32 MiB in chunks rounded up:         +1 -2 +1 +11 +7  (22)
//     new chunks never joined to the top free range:                         -2 +20 0 -1 -5   (28)
//     free 2 MiB pages remapped to the top before growing (NVIDIA's blog):   -3 -16 0 -1 -5   (25)
//     first fit, blocks freed on a stream kept apart (merged among themselves) and reused first
//     until a request fits nowhere, then merged:                            +3 +54 +2 0 +16  (75)
//       (against the replay: -1 +44 0 -3 +2 (50); this model: -6 -11 -1 -4 -18 (40))
// Issue 10 searched a grid of these rules together (best / first / worst fit; requests under
// 256 KiB to 2 MiB in chunks of their own; 512 KiB to 2 MiB rounding from 1 or 2 MiB up) against
// the live peaks, in chunks:
//     best fit, 1 MiB rounding of requests >= 2 MiB (this model):            -1  0  0 +1  0    (2)
//     first fit, 1 MiB rounding of requests >= 1 MiB:                        -1 -1  0 +2 -1    (5)
//     first fit, < 1 MiB apart, 1 MiB rounding of requests >= 1 MiB:         0  0 +1 +2 -1    (4)
//     best fit, < 1 MiB apart:                                               -1  0 +2  0 -3    (6)
// Five traces fix one rule out of some hundred candidates: the fit is to these workloads, and the
// error against a workload unlike them is not known (the replayed real pool is still 4-38% above).
#include "replayer/sim_async_pool.h"

#include <algorithm>
#include <stdexcept>

namespace memreplay {
namespace {

uint64_t round_up(uint64_t n, uint64_t unit) { return (n + unit - 1) / unit * unit; }

}  // namespace

SimAsyncPool::SimAsyncPool(uint64_t base_address) : base_(base_address), end_(base_address) {}

std::optional<uint64_t> SimAsyncPool::allocate(uint64_t bytes, StreamId stream, uint64_t growth_room) {
  const uint64_t span = bytes >= kLargeRequestBytes ? round_up(bytes, kLargeRounding)
                                                    : round_up(std::max<uint64_t>(bytes, 1), kAlignment);
  auto address = take_best_fit(span, stream);
  if (!address) {
    if (!grow(span, stream, growth_room)) return std::nullopt;
    address = take_best_fit(span, stream);
    if (!address) throw std::logic_error("SimAsyncPool: the pool grew but does not hold the allocation");
  }
  live_.emplace(*address, LiveAlloc{span, bytes, stream});
  used_ += bytes;
  return address;
}

bool SimAsyncPool::grow(uint64_t span, StreamId stream, uint64_t growth_room) {
  // Map whole chunks at the top of the pool; a free range that ends there (if this stream may
  // use it) grows with them, so that only the shortfall is new memory.
  uint64_t tail = 0;
  StreamId owner = kAnyStream;
  if (!free_.empty()) {
    const auto last = std::prev(free_.end());
    if (last->first == end_ && (last->second->stream == kAnyStream || last->second->stream == stream)) {
      tail = last->second->size;
      owner = last->second->stream;
    }
  }
  const uint64_t bytes = round_up(span - tail, kChunkBytes);
  if (bytes > growth_room) return false;
  for (uint64_t chunk = end_; chunk < end_ + bytes; chunk += kChunkBytes) chunks_.insert(chunk);
  insert_free(end_, end_ + bytes, owner, 0);
  end_ += bytes;
  reserved_ += bytes;
  ++grow_count_;
  return true;
}

bool SimAsyncPool::free(uint64_t address) {
  const auto it = live_.find(address);
  if (it == live_.end()) return false;
  const LiveAlloc alloc = it->second;
  live_.erase(it);
  used_ -= alloc.requested;
  // With opportunistic or internal-dependency reuse, other streams may take it at once (no GPU
  // work is pending in a replay); otherwise only its stream, until a dependency or a sync.
  const bool shared = config_.reuse_allow_opportunistic || config_.reuse_allow_internal_dependencies;
  insert_free(address, address + alloc.span, shared ? kAnyStream : alloc.stream, ++seq_);
  return true;
}

void SimAsyncPool::stream_event(StreamId stream, uint64_t event_id, bool is_wait) {
  if (!is_wait) {
    events_[event_id] = {stream, seq_};
    return;
  }
  const auto event = events_.find(event_id);
  if (event == events_.end() || !config_.reuse_follow_event_dependencies) return;
  const auto [source, seq] = event->second;
  if (source == stream) return;
  // Ranges `source` freed before the record are now ordered before `stream`'s work.
  std::vector<std::pair<uint64_t, uint64_t>> ranges;  // (start, end)
  for (const auto& [end, range] : free_)
    if (range->stream == source && range->free_seq <= seq) ranges.emplace_back(range->address, end);
  for (const auto& [start, end] : ranges) {
    const auto it = free_.find(end);
    if (it == free_.end() || it->second->address != start) continue;  // merged meanwhile
    const uint64_t free_seq = it->second->free_seq;
    erase_free(it);
    insert_free(start, end, kAnyStream, free_seq);
  }
}

void SimAsyncPool::synchronize() {
  share_all_free();
  if (reserved_ > config_.release_threshold) release_free_chunks(config_.release_threshold);
}

void SimAsyncPool::trim(uint64_t keep_bytes) {
  share_all_free();
  release_free_chunks(keep_bytes);
}

std::vector<std::pair<uint64_t, uint64_t>> SimAsyncPool::chunk_ranges() const {
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const uint64_t chunk : chunks_) {
    if (!ranges.empty() && ranges.back().second == chunk)
      ranges.back().second += kChunkBytes;
    else
      ranges.emplace_back(chunk, chunk + kChunkBytes);
  }
  return ranges;
}

std::vector<SimAsyncPool::FreeRangeView> SimAsyncPool::free_ranges() const {
  std::vector<FreeRangeView> ranges;
  for (const auto& [end, range] : free_) ranges.push_back({range->address, end, range->stream});
  return ranges;
}

std::optional<uint64_t> SimAsyncPool::take_best_fit(uint64_t span, StreamId stream) {
  // The best of the ranges every stream may use and those only this stream may use.
  FreeRange* best = nullptr;
  const auto consider = [&](StreamId owner) {
    FreeRange* fit = by_size_.best_fit(owner, span);
    if (fit == nullptr) return;
    if (best == nullptr || std::pair(fit->size, fit->address) < std::pair(best->size, best->address)) best = fit;
  };
  consider(kAnyStream);
  if (stream != kAnyStream && owned_ranges_ != 0) consider(stream);
  if (best == nullptr) return std::nullopt;
  const uint64_t start = best->address;
  by_size_.erase(best);
  if (best->size == span) {
    free_.erase(best->end());
    recycle(best);
  } else {
    // The remainder keeps its owner and end (its key); its neighbours were already apart from it.
    best->address += span;
    best->size -= span;
    by_size_.insert(best);
  }
  return start;
}

void SimAsyncPool::insert_free(uint64_t start, uint64_t end, StreamId owner, uint64_t free_seq) {
  // The range after [start, end) is the first to end past it; the one before ends at or below start.
  const auto next = free_.upper_bound(end);
  const bool joins_next = next != free_.end() && next->second->address == end && next->second->stream == owner;
  const auto prev = next == free_.begin() ? free_.end() : std::prev(next);
  const bool joins_prev = prev != free_.end() && prev->first == start && prev->second->stream == owner;
  if (joins_prev) {
    FreeRange* before = prev->second;
    start = before->address;
    free_seq = std::max(free_seq, before->free_seq);
    by_size_.erase(before);
  }
  if (joins_next) {
    FreeRange* after = next->second;
    by_size_.erase(after);
    after->size = after->end() - start;
    after->address = start;
    after->free_seq = std::max(free_seq, after->free_seq);
    by_size_.insert(after);
    if (joins_prev) {
      recycle(prev->second);
      free_.erase(prev);  // last: erasing invalidates `next`
    }
    return;
  }
  if (joins_prev) {
    // Keyed by end: a range merged into the one before takes that one's node with a new key.
    FreeRange* merged = prev->second;
    const auto hint = free_.erase(prev);
    merged->size = end - start;
    merged->free_seq = free_seq;
    free_.emplace_hint(hint, end, merged);
    by_size_.insert(merged);
    return;
  }
  add_free(start, end, owner, free_seq, next);
}

void SimAsyncPool::add_free(uint64_t start, uint64_t end, StreamId owner, uint64_t free_seq,
                            FreeRanges::const_iterator hint) {
  FreeRange* range = new_range();
  range->stream = owner;
  range->size = end - start;
  range->address = start;
  range->free_seq = free_seq;
  if (owner != kAnyStream) ++owned_ranges_;
  free_.emplace_hint(hint, end, range);
  by_size_.insert(range);
}

SimAsyncPool::FreeRange* SimAsyncPool::new_range() {
  if (spare_ranges_.empty()) return &range_storage_.emplace_back();
  FreeRange* range = spare_ranges_.back();
  spare_ranges_.pop_back();
  return range;
}

void SimAsyncPool::erase_free(FreeRanges::iterator it) {
  by_size_.erase(it->second);
  recycle(it->second);
  free_.erase(it);
}

void SimAsyncPool::share_all_free() {
  std::vector<std::tuple<uint64_t, uint64_t, uint64_t>> ranges;  // (start, end, free_seq)
  ranges.reserve(free_.size());
  for (const auto& [end, range] : free_) {
    ranges.emplace_back(range->address, end, range->free_seq);
    by_size_.erase(range);
    recycle(range);
  }
  free_.clear();
  for (const auto& [start, end, free_seq] : ranges) insert_free(start, end, kAnyStream, free_seq);
}

void SimAsyncPool::release_free_chunks(uint64_t keep_bytes) {
  // Chunks that lie wholly inside a free range, highest address first.
  std::vector<uint64_t> candidates;
  for (const auto& [end, range] : free_)
    for (uint64_t chunk = base_ + round_up(range->address - base_, kChunkBytes); chunk + kChunkBytes <= end;
         chunk += kChunkBytes)
      candidates.push_back(chunk);
  std::sort(candidates.rbegin(), candidates.rend());
  for (const uint64_t chunk : candidates) {
    if (reserved_ <= keep_bytes) break;
    // Cut [chunk, chunk + kChunkBytes) out of the free range that holds it: the first to end past it.
    const auto it = free_.upper_bound(chunk);
    const uint64_t end = it->first;
    const uint64_t start = it->second->address;
    const StreamId owner = it->second->stream;
    const uint64_t free_seq = it->second->free_seq;
    erase_free(it);
    if (start < chunk) add_free(start, chunk, owner, free_seq, free_.end());
    if (chunk + kChunkBytes < end) add_free(chunk + kChunkBytes, end, owner, free_seq, free_.end());
    chunks_.erase(chunk);
    reserved_ -= kChunkBytes;
  }
}

}  // namespace memreplay
