#include "replayer/sim_async_pool.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

namespace memreplay {
namespace {

uint64_t round_up(uint64_t n, uint64_t unit) { return (n + unit - 1) / unit * unit; }

// CALIBRATION KNOBS (temporary)
const bool kFirstFit = std::getenv("POOL_FIRST_FIT") != nullptr;
const uint64_t kAlign = std::getenv("POOL_ALIGN") ? std::strtoull(std::getenv("POOL_ALIGN"), nullptr, 10) : 512;
const bool kNoTailExtend = std::getenv("POOL_NO_TAIL") != nullptr;
const uint64_t kLargeAlign = std::getenv("POOL_LARGE_ALIGN") ? std::strtoull(std::getenv("POOL_LARGE_ALIGN"), nullptr, 10) : 0;
const uint64_t kLargeFrom = std::getenv("POOL_LARGE_FROM") ? std::strtoull(std::getenv("POOL_LARGE_FROM"), nullptr, 10) : 0;

}  // namespace

SimAsyncPool::SimAsyncPool(uint64_t base_address) : base_(base_address), end_(base_address) {}

std::optional<uint64_t> SimAsyncPool::allocate(uint64_t bytes, StreamId stream, uint64_t growth_room) {
  uint64_t span = round_up(std::max<uint64_t>(bytes, 1), kAlign);
  if (kLargeAlign && span >= kLargeFrom) span = round_up(span, kLargeAlign);
  auto address = take_best_fit(span, stream);
  if (!address) {
    if (!grow(span, stream, growth_room)) return std::nullopt;
    address = take_best_fit(span, stream);
    if (!address) throw std::logic_error("SimAsyncPool: the pool grew but does not hold the allocation");
  }
  live_.emplace(*address, LiveAlloc{span, bytes});
  used_ += bytes;
  return address;
}

const bool kRemap = std::getenv("POOL_REMAP") != nullptr;
const bool kRemapLow = std::getenv("POOL_REMAP_LOW") != nullptr;
const uint64_t kPage = std::getenv("POOL_PAGE") ? std::strtoull(std::getenv("POOL_PAGE"), nullptr, 10) : (2ull << 20);

bool SimAsyncPool::grow(uint64_t span, StreamId stream, uint64_t growth_room) {
  // Extend the free range at the top of the pool, if this stream may use it, by whole chunks.
  uint64_t tail = 0;
  uint64_t tail_start = end_;
  StreamId owner = kAnyStream;
  if (!free_.empty() && !kNoTailExtend) {
    const auto last = std::prev(free_.end());
    if (last->second.end == end_ && (last->second.owner == kAnyStream || last->second.owner == stream)) {
      tail = last->second.end - last->first;
      tail_start = last->first;
      owner = last->second.owner;
    }
  }
  uint64_t need = round_up(span - tail, kPage);
  uint64_t moved = 0;
  if (kRemap) {
    // wholly free pages elsewhere, usable by this stream
    std::vector<uint64_t> pages;
    for (const auto& [start, range] : free_) {
      if (start == tail_start && range.end == end_) continue;
      if (!(range.owner == kAnyStream || range.owner == stream)) continue;
      for (uint64_t p = base_ + round_up(start - base_, kPage); p + kPage <= range.end; p += kPage) pages.push_back(p);
    }
    if (!kRemapLow) std::sort(pages.rbegin(), pages.rend());
    const uint64_t want = need / kPage;
    if (pages.size() > want) pages.resize(want);
    for (const uint64_t page : pages) {
      const auto it = std::prev(free_.upper_bound(page));
      const uint64_t start = it->first;
      const FreeRange range = it->second;
      erase_free(it);
      if (start < page) {
        free_.emplace(start, FreeRange{page, range.owner, range.free_seq});
        by_size_[range.owner].emplace(page - start, start);
      }
      if (page + kPage < range.end) {
        free_.emplace(page + kPage, range);
        by_size_[range.owner].emplace(range.end - page - kPage, page + kPage);
      }
      moved += kPage;
    }
    need -= moved;
  }
  const uint64_t bytes = need == 0 ? 0 : round_up(need, kChunkBytes);
  if (bytes > growth_room) return false;  // (remapped pages stay moved; fine for experiments)
  insert_free(end_, FreeRange{end_ + bytes + moved, owner, 0});
  end_ += bytes + moved;
  reserved_ += bytes;
  if (bytes) ++grow_count_;
  return true;
}

void SimAsyncPool::free(uint64_t address, StreamId stream) {
  const auto it = live_.find(address);
  if (it == live_.end()) throw std::logic_error("SimAsyncPool::free of an address it never handed out");
  const LiveAlloc alloc = it->second;
  live_.erase(it);
  used_ -= alloc.requested;
  // With opportunistic or internal-dependency reuse, other streams may take it at once (no GPU
  // work is pending in a replay); otherwise only `stream`, until a dependency or a sync.
  const bool shared = config_.reuse_allow_opportunistic || config_.reuse_allow_internal_dependencies;
  insert_free(address, FreeRange{address + alloc.span, shared ? kAnyStream : stream, ++seq_});
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
  std::vector<uint64_t> starts;
  for (const auto& [start, range] : free_)
    if (range.owner == source && range.free_seq <= seq) starts.push_back(start);
  for (const uint64_t start : starts) {
    const auto it = free_.find(start);
    if (it == free_.end()) continue;  // merged into an earlier one meanwhile
    FreeRange range = it->second;
    erase_free(it);
    range.owner = kAnyStream;
    insert_free(start, range);
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

std::optional<uint64_t> SimAsyncPool::take_best_fit(uint64_t span, StreamId stream) {
  std::optional<std::pair<uint64_t, uint64_t>> best;
  if (kFirstFit) {
    for (const auto& [start, range] : free_) {
      if ((range.owner == kAnyStream || range.owner == stream) && range.end - start >= span) {
        best = std::pair{range.end - start, start};
        break;
      }
    }
  } else {
  // The best of the ranges every stream may use and those only this stream may use.
  for (const StreamId owner : {kAnyStream, stream}) {
    const auto index = by_size_.find(owner);
    if (index == by_size_.end()) continue;
    const auto fit = index->second.lower_bound({span, 0});
    if (fit != index->second.end() && (!best || *fit < *best)) best = *fit;
  }
  }
  if (!best) return std::nullopt;
  const uint64_t start = best->second;
  const auto it = free_.find(start);
  FreeRange range = it->second;
  erase_free(it);
  if (start + span < range.end) {
    // The remainder keeps its owner; its neighbours were already apart from it.
    const uint64_t rest = start + span;
    free_.emplace(rest, range);
    by_size_[range.owner].emplace(range.end - rest, rest);
  }
  return start;
}

void SimAsyncPool::insert_free(uint64_t start, FreeRange range) {
  auto next = free_.lower_bound(start);
  if (next != free_.end() && next->first == range.end && next->second.owner == range.owner) {
    range.end = next->second.end;
    range.free_seq = std::max(range.free_seq, next->second.free_seq);
    erase_free(next);
    next = free_.lower_bound(start);
  }
  if (next != free_.begin()) {
    const auto prev = std::prev(next);
    if (prev->second.end == start && prev->second.owner == range.owner) {
      start = prev->first;
      range.free_seq = std::max(range.free_seq, prev->second.free_seq);
      erase_free(prev);
    }
  }
  free_.emplace(start, range);
  by_size_[range.owner].emplace(range.end - start, start);
}

void SimAsyncPool::erase_free(std::map<uint64_t, FreeRange>::iterator it) {
  by_size_[it->second.owner].erase({it->second.end - it->first, it->first});
  free_.erase(it);
}

void SimAsyncPool::share_all_free() {
  std::vector<std::pair<uint64_t, FreeRange>> ranges(free_.begin(), free_.end());
  free_.clear();
  by_size_.clear();
  for (auto& [start, range] : ranges) {
    range.owner = kAnyStream;
    insert_free(start, range);
  }
}

void SimAsyncPool::release_free_chunks(uint64_t keep_bytes) {
  // Chunks that lie wholly inside a free range, highest address first.
  std::vector<uint64_t> candidates;
  for (const auto& [start, range] : free_)
    for (uint64_t chunk = base_ + round_up(start - base_, kChunkBytes); chunk + kChunkBytes <= range.end;
         chunk += kChunkBytes)
      candidates.push_back(chunk);
  std::sort(candidates.rbegin(), candidates.rend());
  for (const uint64_t chunk : candidates) {
    if (reserved_ <= keep_bytes) break;
    // Cut [chunk, chunk + kChunkBytes) out of the free range that holds it.
    const auto it = std::prev(free_.upper_bound(chunk));
    const uint64_t start = it->first;
    const FreeRange range = it->second;
    erase_free(it);
    if (start < chunk) {
      free_.emplace(start, FreeRange{chunk, range.owner, range.free_seq});
      by_size_[range.owner].emplace(chunk - start, start);
    }
    if (chunk + kChunkBytes < range.end) {
      free_.emplace(chunk + kChunkBytes, range);
      by_size_[range.owner].emplace(range.end - chunk - kChunkBytes, chunk + kChunkBytes);
    }
    chunks_.erase(chunk);
    reserved_ -= kChunkBytes;
  }
}

}  // namespace memreplay
