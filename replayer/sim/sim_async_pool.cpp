// Calibration of SimAsyncPool against live backend:cudaMallocAsync runs, in 32 MiB chunks:
//   live    max_memory_reserved (= ReservedMemHigh) of the live runs: five shared ones (H200,
//           driver 580.159.04, runs/WORKLOAD.asyncpool.json) and seven pool jobs (H100 80GB,
//           driver of CUDA 13, tests/data/pools/JOB.asyncpool.json, capped_varlen uncapped);
//   replay  ReservedMemHigh of the real pool replaying the same trace with cuda_async on
//           CudaDevice (tools/gpu/check.sh, 2026-11-30, shared runs only: no GPU work, frees
//           complete at once).
// "requested" is the requested peak; it equals the live run's max_memory_allocated (=
// UsedMemHigh) to the byte (for the pool jobs: of what a graph capture did not allocate).
//
//   run                       requested   live  replay  model  model-live   before  (model-live)
//   gpt2_generate                 31.0     35     39     34    -32 MiB         34   (-32 MiB)
//   gpt2_train                   229.5    248    258    255   +224 MiB +2.8%  248   (0)
//   multistream_pipeline          14.0     15     17     15      0             15   (0)
//   resnet50_train                95.1     97    100     98    +32 MiB         98   (+32 MiB)
//   vit_infer_varbatch            31.1     37     51     37      0             37   (0)
//   graphs_eager_between           5.6      7      -      7      0              7   (0)
//   graphs_pool_released           5.6      7      -      7      0              7   (0)
//   compile_default_training       8.0      9      -      9      0              9   (0)
//   models_in_turn                19.3     20      -     20      0             20   (0)
//   varlen_checkpointing          53.5     64      -     64      0             62   (-3.1%)
//   capped_varlen                 51.4     62      -     61    -32 MiB -1.6%   56   (-9.7%)
//   varres_fcn                   118.4    165      -    164    -32 MiB -0.6%  134   (-18.8%)
// "model" is this model; every run is within 3% or one chunk of its live one. "before" is the
// model without the size classes (one range for every request), which packed the variable-shape
// training runs (sizes change every step, many blocks over 100 MiB) tighter than the driver.
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
// GPU works.
//
// Variants tried against the five shared live peaks (chunk errors in the order above, sum
// |error|), before the pool jobs:
//     best fit, 512-byte alignment, no rounding:                             -2 -1 +1 -1 -4    (9)
//     first fit instead of best fit:                                         -2 -1  0  0 -4    (7)
//     1 MiB rounding of requests >= 1 MiB:                                   -1  0  0 +1 -3    (5)
//     requests < 1 MiB in chunks of their own:                               -1 -1 +2  0 +1    (5)
//     2 MiB rounding of requests >= 2 MiB:                                   +1 +6  0 +5 +2   (14)
//     each chunk on its own, requests > 32 MiB in chunks rounded up:         +1 -2 +1 +11 +7  (22)
//     new chunks never joined to the top free range:                         -2 +20 0 -1 -5   (28)
//     free 2 MiB pages remapped to the top before growing (NVIDIA's blog):   -3 -16 0 -1 -5   (25)
//     first fit, blocks freed on a stream kept apart (merged among themselves) and reused first
//     until a request fits nowhere, then merged:                            +3 +54 +2 0 +16  (75)
//       (against the replay: -1 +44 0 -3 +2 (50); the model then: -6 -11 -1 -4 -18 (40))
//     a grid (best / first / worst fit; requests under 256 KiB to 2 MiB in chunks of their own;
//     512 KiB to 2 MiB rounding from 1 or 2 MiB up); best: best fit, 1 MiB rounding of requests
//     >= 2 MiB: -1 0 0 +1 0 (2), the model before the size classes.
// Variants tried against all twelve (errors in chunks in the table's order; misses of the target
// / sum |error|); each is the model before plus the change named:
//     none (the model before):               -1  0  0 +1  0  0  0  0  0  -2  -6 -31   3 / 41
//     requests >= 128 MiB in a range of their own (this model):
//                                            -1 +7  0 +1  0  0  0  0  0   0  -1  -1   0 / 11
//       the same from 120 MiB:               -1 +7  0 +1  0  0  0  0  0   0  +4  -4   1 / 17
//       from 136 MiB:                        -1 +7  0 +1  0  0  0  0  0  -2  -6 -16   3 / 33
//       from 64 MiB:                         -1 +5  0 +8 -3  0  0  0  0  +3  +4 -16   5 / 40
//       from 256 MiB:                        -1 +7  0 +1  0  0  0  0  0  -2  -6  +6   3 / 23
//       from 2 MiB:                          +1 +1 +2 +2 -1 +1 +1  0 +1  -1  -1 -30   2 / 42
//     a freed block merges with its free neighbours only at the next free (late merging by one):
//                                            -1  0 +2 +1 -1  0  0  0  0  -1   0  -5   2 / 11
//       only after 2, 4, 8, 16 or 32 more frees:    3 to 9 misses, sum 22 to 95
//       the same with first fit:             -1 -1 +2 +1 -2  0  0  0 +1  -3  -1  -4   3 / 16
//       the same, an exact-size freed block reused first:
//                                            -1  0 +2 +1 -1  0  0  0  0   0   0 -13   2 / 18
//     merging only when a request fits nowhere (late merging):
//                                            +1 +43 +3 +4 +1  0  0  0  0  +1 +21  +6   5 / 80
//     requests >= 64 MiB take the highest free range that fits:
//                                            -1 -1  0 +1  0  0  0  0  0  +1  +1 -15   1 / 20
//       from 48 MiB: gpt2_train +90 (3 / 112); from 128 MiB: -2 -6 -25 (3 / 36)
//     requests >= 32 MiB take the back of the best fit:
//                                             0 +20 +1 +1 -1  0  0  0  0   0  -1 -10   2 / 34
//     first fit:                             -1 -1  0 +2 -1  0  0  0  0  -3  -4 -30   3 / 42
//     worst fit:                 +4 +271 +1 +11 +29  0  0 +3  0 +58 +41 -2   7 / 420
//     2 MiB rounding of requests >= 32 MiB; 32 MiB rounding of requests >= 128 or 256 MiB:
//                                            at least 2 misses, varres_fcn -30 or -31
// The size classes are the one rule found that meets all twelve, but their boundary is fitted:
// 120 or 136 MiB misses one to three runs (capped_varlen's largest requests are 132 MiB). The
// error against a workload unlike these twelve is not known.
#include "replayer/sim/sim_async_pool.h"

#include <algorithm>
#include <stdexcept>

namespace memreplay {
namespace {

uint64_t round_up(uint64_t n, uint64_t unit) { return (n + unit - 1) / unit * unit; }

}  // namespace

SimAsyncPool::SimAsyncPool(uint64_t base_address)
    : huge_(new SimAsyncPool(base_address + kSeparateRangeOffset, OneRange{})),
      base_(base_address),
      end_(base_address) {}

std::optional<uint64_t> SimAsyncPool::allocate(uint64_t bytes, StreamId stream, uint64_t growth_room) {
  if (bytes >= kSeparateRequestBytes) return huge_->allocate_here(bytes, stream, growth_room);
  return allocate_here(bytes, stream, growth_room);
}

std::optional<uint64_t> SimAsyncPool::allocate_here(uint64_t bytes, StreamId stream, uint64_t growth_room) {
  const uint64_t span = bytes >= kLargeRequestBytes ? round_up(bytes, kLargeRounding)
                                                    : round_up(std::max<uint64_t>(bytes, 1), kAlignment);
  Piece* range = best_fit(span, stream);
  if (range == nullptr) [[unlikely]] {
    if (!grow(span, stream, growth_room)) return std::nullopt;
    range = best_fit(span, stream);
    if (range == nullptr) throw std::logic_error("SimAsyncPool: the pool grew but does not hold the allocation");
  }
  // The allocation takes the range's front: the whole range, or a new piece before what is left.
  Piece* taken = range;
  if (range->size == span) {
    by_size_.erase(range);
    if (range->stream != kAnyStream) --owned_ranges_;
  } else {
    taken = pieces_.insert_before(range);
    taken->address = range->address;
    taken->size = span;
    reshape(range, range->address + span, range->end(), range->free_seq);
  }
  taken->is_free = false;
  taken->stream = stream;
  taken->requested = bytes;
  *live_.try_emplace(taken->address).first = taken;
  used_ += bytes;
  return taken->address;
}

SimAsyncPool::Piece* SimAsyncPool::best_fit(uint64_t span, StreamId stream) const {
  // The best of the ranges every stream may use and those only this stream may use.
  Piece* best = by_size_.best_fit(kAnyStream, span);
  if (stream != kAnyStream && owned_ranges_ != 0) [[unlikely]] {
    Piece* own = by_size_.best_fit(stream, span);
    if (own != nullptr &&
        (best == nullptr || std::pair(own->size, own->address) < std::pair(best->size, best->address)))
      best = own;
  }
  return best;
}

bool SimAsyncPool::grow(uint64_t span, StreamId stream, uint64_t growth_room) {
  // Map whole chunks at the top of the pool; a free range that ends there (if this stream may
  // use it) grows with them, so that only the shortfall is new memory.
  uint64_t tail = 0;
  StreamId owner = kAnyStream;
  if (const Piece* last = pieces_.last(); last != nullptr && last->is_free && last->end() == end_ &&
                                          (last->stream == kAnyStream || last->stream == stream)) {
    tail = last->size;
    owner = last->stream;
  }
  const uint64_t bytes = round_up(span - tail, kChunkBytes);
  if (bytes > growth_room) return false;
  for (uint64_t chunk = end_; chunk < end_ + bytes; chunk += kChunkBytes) chunks_.insert(chunk);
  Piece* fresh = pieces_.insert_before(nullptr);
  fresh->address = end_;
  fresh->size = bytes;
  fresh->stream = owner;
  fresh->is_free = true;
  if (owner != kAnyStream) ++owned_ranges_;
  merge_free(fresh);
  end_ += bytes;
  reserved_ += bytes;
  ++grow_count_;
  return true;
}

bool SimAsyncPool::free(uint64_t address) { return free_here(address) || huge_->free_here(address); }

bool SimAsyncPool::free_here(uint64_t address) {
  const std::optional<Piece*> taken = live_.take(address);
  if (!taken) return false;
  Piece* piece = *taken;
  used_ -= piece->requested;
  // With opportunistic or internal-dependency reuse, other streams may take it at once (no GPU
  // work is pending in a replay); otherwise only its stream, until a dependency or a sync.
  if (config_.reuse_allow_opportunistic || config_.reuse_allow_internal_dependencies)
    piece->stream = kAnyStream;
  else
    ++owned_ranges_;
  piece->is_free = true;
  piece->requested = 0;
  piece->free_seq = ++seq_;
  merge_free(piece);
  return true;
}

void SimAsyncPool::merge_free(Piece* piece) {
  Piece* before = piece->prev;
  Piece* after = piece->next;
  const bool joins_before =
      before != nullptr && before->is_free && before->stream == piece->stream && before->touches(*piece);
  const bool joins_after =
      after != nullptr && after->is_free && after->stream == piece->stream && piece->touches(*after);
  if (!joins_before && !joins_after) {
    by_size_.insert(piece);
    return;
  }
  // A neighbour already in the index takes the union; `piece` (in no index) goes.
  uint64_t start = piece->address;
  uint64_t end = piece->end();
  uint64_t free_seq = piece->free_seq;
  if (joins_before) {
    start = before->address;
    free_seq = std::max(free_seq, before->free_seq);
  }
  if (joins_after) {
    end = after->end();
    free_seq = std::max(free_seq, after->free_seq);
  }
  Piece* kept = joins_after ? after : before;
  if (joins_after && joins_before) remove_free(before);
  if (piece->stream != kAnyStream) --owned_ranges_;
  pieces_.remove(piece);
  reshape(kept, start, end, free_seq);
}

void SimAsyncPool::reshape(Piece* range, uint64_t start, uint64_t end, uint64_t free_seq) {
  by_size_.erase(range);
  range->address = start;
  range->size = end - start;
  range->free_seq = free_seq;
  by_size_.insert(range);
}

void SimAsyncPool::remove_free(Piece* range) {
  by_size_.erase(range);
  if (range->stream != kAnyStream) --owned_ranges_;
  pieces_.remove(range);
}

void SimAsyncPool::share(Piece* range) {
  by_size_.erase(range);
  --owned_ranges_;
  range->stream = kAnyStream;
  merge_free(range);
}

void SimAsyncPool::stream_event(StreamId stream, uint64_t event_id, bool is_wait) {
  stream_event_here(stream, event_id, is_wait);
  huge_->stream_event_here(stream, event_id, is_wait);
}

void SimAsyncPool::stream_event_here(StreamId stream, uint64_t event_id, bool is_wait) {
  if (!is_wait) {
    events_[event_id] = {stream, seq_};
    return;
  }
  const auto event = events_.find(event_id);
  if (event == events_.end() || !config_.reuse_follow_event_dependencies) return;
  const auto [source, seq] = event->second;
  if (source == stream) return;
  // Ranges `source` freed before the record are now ordered before `stream`'s work. Sharing one
  // merges it only with ranges every stream may use, never with another of `source`'s.
  for (Piece* range : stream_owned_ranges())
    if (range->stream == source && range->free_seq <= seq) share(range);
}

void SimAsyncPool::synchronize() {
  share_all_free();
  huge_->share_all_free();
  if (reserved_bytes() > config_.release_threshold) release_both(config_.release_threshold);
}

void SimAsyncPool::trim(uint64_t keep_bytes) {
  share_all_free();
  huge_->share_all_free();
  release_both(keep_bytes);
}

void SimAsyncPool::release_both(uint64_t keep_bytes) {
  huge_->release_free_chunks(keep_bytes > reserved_ ? keep_bytes - reserved_ : 0);
  const uint64_t huge = huge_->reserved_bytes();
  release_free_chunks(keep_bytes > huge ? keep_bytes - huge : 0);
}

std::vector<std::pair<uint64_t, uint64_t>> SimAsyncPool::chunk_ranges() const {
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  std::vector<uint64_t> chunks(chunks_.begin(), chunks_.end());
  if (huge_) chunks.insert(chunks.end(), huge_->chunks_.begin(), huge_->chunks_.end());
  for (const uint64_t chunk : chunks) {
    if (!ranges.empty() && ranges.back().second == chunk)
      ranges.back().second += kChunkBytes;
    else
      ranges.emplace_back(chunk, chunk + kChunkBytes);
  }
  return ranges;
}

std::vector<SimAsyncPool::FreeRangeView> SimAsyncPool::free_ranges() const {
  std::vector<FreeRangeView> ranges;
  for (const Piece* piece = pieces_.first(); piece != nullptr; piece = piece->next)
    if (piece->is_free) ranges.push_back({piece->address, piece->end(), piece->stream});
  if (huge_)
    for (const FreeRangeView& range : huge_->free_ranges()) ranges.push_back(range);
  return ranges;
}

std::vector<SimAsyncPool::Piece*> SimAsyncPool::stream_owned_ranges() const {
  std::vector<Piece*> owned;
  if (owned_ranges_ == 0) return owned;
  owned.reserve(owned_ranges_);
  by_size_.for_each([&](Piece* range) {
    if (range->stream != kAnyStream) owned.push_back(range);
  });
  return owned;
}

void SimAsyncPool::share_all_free() {
  for (Piece* range : stream_owned_ranges()) share(range);
}

void SimAsyncPool::release_free_chunks(uint64_t keep_bytes) {
  // Chunks that lie wholly inside a free range, highest address first: the ranges from the
  // highest down, and in each its chunks from the top.
  std::vector<Piece*> ranges;
  by_size_.for_each([&](Piece* range) { ranges.push_back(range); });
  std::sort(ranges.begin(), ranges.end(), [](const Piece* a, const Piece* b) { return a->address > b->address; });
  for (Piece* range : ranges) {
    const uint64_t lowest = base_ + round_up(range->address - base_, kChunkBytes);
    for (uint64_t top = base_ + (range->end() - base_) / kChunkBytes * kChunkBytes; top >= lowest + kChunkBytes;
         top -= kChunkBytes) {
      if (reserved_ <= keep_bytes) return;
      // Cut [chunk, top) out of the range: what lies above it becomes a piece of its own.
      const uint64_t chunk = top - kChunkBytes;
      if (top < range->end()) {
        Piece* above = pieces_.insert_after(range);
        above->address = top;
        above->size = range->end() - top;
        above->stream = range->stream;
        above->free_seq = range->free_seq;
        above->is_free = true;
        if (above->stream != kAnyStream) ++owned_ranges_;
        by_size_.insert(above);
      }
      chunks_.erase(chunk);
      reserved_ -= kChunkBytes;
      if (range->address == chunk) {
        remove_free(range);
        break;
      }
      reshape(range, range->address, chunk, range->free_seq);
    }
  }
}

}  // namespace memreplay
