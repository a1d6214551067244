// SimAsyncPool (size bins and pooled range nodes) against a plain reference of the same rules: free
// ranges in a std::map by start, best fit by a scan of every range, merging by a pass over
// neighbours after each change. Random allocations, frees (each on its allocation stream; some of
// addresses that are not live, which both must refuse), stream events, synchronizes and trims on
// three streams under each option set the policy contract runs; after every step the two agree on
// the address handed out (or the OOM), used and reserved bytes, every free range with its owner
// and the mapped chunks.
#include "replayer/sim/sim_async_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <ostream>
#include <random>
#include <set>
#include <vector>

namespace memreplay {

void PrintTo(const SimAsyncPool::FreeRangeView& r, std::ostream* os) {
  *os << std::hex << "[0x" << r.start << ", 0x" << r.end << ") owner 0x" << r.owner << std::dec;
}

namespace {

constexpr uint64_t kChunk = SimAsyncPool::kChunkBytes;
constexpr StreamId kAny = SimAsyncPool::kAnyStream;

uint64_t round_up(uint64_t n, uint64_t unit) { return (n + unit - 1) / unit * unit; }

class ReferencePool {
 public:
  ReferencePool(uint64_t base, PoolConfig config) : base_(base), end_(base), config_(config) {}

  std::optional<uint64_t> allocate(uint64_t bytes, StreamId stream, uint64_t room) {
    const uint64_t span = bytes >= SimAsyncPool::kLargeRequestBytes
                              ? round_up(bytes, SimAsyncPool::kLargeRounding)
                              : round_up(std::max<uint64_t>(bytes, 1), SimAsyncPool::kAlignment);
    auto start = best_fit(span, stream);
    if (!start) {
      uint64_t tail = 0;
      StreamId owner = kAny;
      for (const auto& [s, r] : free_)
        if (r.end == end_ && (r.owner == kAny || r.owner == stream)) tail = r.end - s, owner = r.owner;
      const uint64_t grown = round_up(span - tail, kChunk);
      if (grown > room) return std::nullopt;
      for (uint64_t c = end_; c < end_ + grown; c += kChunk) chunks_.insert(c);
      free_[end_] = {end_ + grown, owner, 0};
      end_ += grown;
      merge();
      start = best_fit(span, stream);
    }
    const Range range = free_.at(*start);
    free_.erase(*start);
    if (range.end > *start + span) free_[*start + span] = range;
    live_[*start] = {span, bytes, stream};
    used_ += bytes;
    return start;
  }

  // On the stream it was allocated on; false for an address that is not live.
  bool free(uint64_t address) {
    const auto it = live_.find(address);
    if (it == live_.end()) return false;
    const Live live = it->second;
    live_.erase(it);
    used_ -= live.requested;
    const bool shared = config_.reuse_allow_opportunistic || config_.reuse_allow_internal_dependencies;
    free_[address] = {address + live.span, shared ? kAny : live.stream, ++seq_};
    merge();
    return true;
  }

  void stream_event(StreamId stream, uint64_t event, bool is_wait) {
    if (!is_wait) {
      events_[event] = {stream, seq_};
      return;
    }
    const auto it = events_.find(event);
    if (it == events_.end() || !config_.reuse_follow_event_dependencies || it->second.first == stream) return;
    for (auto& [s, r] : free_)
      if (r.owner == it->second.first && r.free_seq <= it->second.second) r.owner = kAny;
    merge();
  }

  void synchronize() {
    share();
    release(config_.release_threshold);
  }
  void trim(uint64_t keep) {
    share();
    release(keep);
  }

  std::vector<SimAsyncPool::FreeRangeView> free_ranges() const {
    std::vector<SimAsyncPool::FreeRangeView> ranges;
    for (const auto& [start, r] : free_) ranges.push_back({start, r.end, r.owner});
    return ranges;
  }
  uint64_t used() const { return used_; }
  uint64_t reserved() const { return chunks_.size() * kChunk; }
  const std::set<uint64_t>& chunks() const { return chunks_; }

 private:
  struct Range {
    uint64_t end;
    StreamId owner;
    uint64_t free_seq;
  };
  struct Live {
    uint64_t span;
    uint64_t requested;
    StreamId stream;
  };

  std::optional<uint64_t> best_fit(uint64_t span, StreamId stream) const {
    std::optional<std::pair<uint64_t, uint64_t>> best;  // (size, start)
    for (const auto& [s, r] : free_)
      if ((r.owner == kAny || r.owner == stream) && r.end - s >= span && (!best || std::pair(r.end - s, s) < *best))
        best = std::pair(r.end - s, s);
    if (!best) return std::nullopt;
    return best->second;
  }
  void merge() {  // neighbours of one owner are one range
    for (auto it = free_.begin(); it != free_.end();) {
      const auto next = std::next(it);
      if (next != free_.end() && next->first == it->second.end && next->second.owner == it->second.owner) {
        it->second.end = next->second.end;
        it->second.free_seq = std::max(it->second.free_seq, next->second.free_seq);
        free_.erase(next);
      } else {
        it = next;
      }
    }
  }
  void share() {
    for (auto& [s, r] : free_) r.owner = kAny;
    merge();
  }
  void release(uint64_t keep) {
    for (auto c = chunks_.rbegin(); c != chunks_.rend() && reserved() > keep;) {
      const uint64_t chunk = *c++;
      auto it = free_.upper_bound(chunk);
      if (it == free_.begin()) continue;
      --it;
      if (it->second.end < chunk + kChunk) continue;  // not wholly free
      const auto [s, r] = *it;
      free_.erase(it);
      if (s < chunk) free_[s] = {chunk, r.owner, r.free_seq};
      if (chunk + kChunk < r.end) free_[chunk + kChunk] = r;
      chunks_.erase(chunk);
      c = std::make_reverse_iterator(chunks_.upper_bound(chunk));
    }
  }

  uint64_t base_, end_;
  PoolConfig config_;
  std::map<uint64_t, Range> free_;  // start -> range
  std::map<uint64_t, Live> live_;  // by address
  std::map<uint64_t, std::pair<StreamId, uint64_t>> events_;
  std::set<uint64_t> chunks_;
  uint64_t seq_ = 0, used_ = 0;
};

std::set<uint64_t> chunk_starts(const SimAsyncPool& pool) {
  std::set<uint64_t> starts;
  for (const auto& [start, end] : pool.chunk_ranges())
    for (uint64_t c = start; c < end; c += kChunk) starts.insert(c);
  return starts;
}

// `crowded`: first 1,200 free ranges of 512 bytes between live ones, so that the walk runs on the
// size index's B-tree (past 1024 ranges) instead of its bins.
void run_against_reference(PoolConfig config, uint64_t seed, bool crowded = false) {
  constexpr uint64_t kBase = 1ull << 40;
  constexpr uint64_t kCapacity = 24 * kChunk;
  SimAsyncPool pool(kBase);
  pool.configure(config);
  ReferencePool reference(kBase, config);
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> live, freed;
  uint64_t ooms = 0, frees = 0, refused_frees = 0;
  if (crowded) {
    for (int i = 0; i < 2400; ++i) {
      const auto got = pool.allocate(512, 0, kCapacity);
      ASSERT_EQ(got, reference.allocate(512, 0, kCapacity));
      live.push_back(*got);
    }
    for (size_t i = 0; i < live.size(); i += 2) {
      ASSERT_TRUE(pool.free(live[i]));
      ASSERT_TRUE(reference.free(live[i]));
      freed.push_back(live[i]);
    }
    std::erase_if(live, [&](uint64_t a) { return std::find(freed.begin(), freed.end(), a) != freed.end(); });
    ASSERT_FALSE(pool.size_index_binned());
  }
  for (int step = 0; step < 6000; ++step) {
    const uint64_t dice = rng() % 100;
    const StreamId stream = rng() % 3;
    if (dice < 50 || live.empty()) {
      // Sizes that crowd a few bins (many equal small blocks) and large ones that grow the pool.
      const uint64_t kind = rng() % 10;
      const uint64_t bytes = kind < 5   ? 512 * (1 + rng() % 4)
                             : kind < 8 ? 1 + rng() % (1u << 20)
                                        : (2u << 20) + rng() % (40u << 20);
      const uint64_t room = kCapacity - std::min(kCapacity, pool.reserved_bytes());
      const auto got = pool.allocate(bytes, stream, room);
      const auto expected = reference.allocate(bytes, stream, room);
      ASSERT_EQ(got, expected) << "step " << step << " bytes " << bytes;
      if (got)
        live.push_back(*got);
      else
        ++ooms;
    } else if (dice < 90) {
      const size_t i = rng() % live.size();
      ASSERT_TRUE(pool.free(live[i]));
      ASSERT_TRUE(reference.free(live[i]));
      freed.push_back(live[i]);
      live[i] = live.back();
      live.pop_back();
      ++frees;
    } else if (dice < 92) {
      // An address that is not live (freed already, unless handed out again, or inside a live
      // block): refused, with nothing changed, exactly when the reference refuses it.
      const uint64_t address =
          freed.empty() || rng() % 2 == 0 ? live[rng() % live.size()] + 1 : freed[rng() % freed.size()];
      const bool expected = reference.free(address);
      ASSERT_EQ(pool.free(address), expected) << "step " << step;
      if (expected)
        std::erase(live, address), ++frees;
      else
        ++refused_frees;
    } else if (dice < 98) {
      const uint64_t event = rng() % 4;
      const bool is_wait = rng() % 2 == 0;
      pool.stream_event(stream, event, is_wait);
      reference.stream_event(stream, event, is_wait);
    } else if (dice < 99) {
      pool.synchronize();
      reference.synchronize();
    } else {
      const uint64_t keep = (rng() % 8) * kChunk;
      pool.trim(keep);
      reference.trim(keep);
    }
    ASSERT_EQ(pool.used_bytes(), reference.used()) << "step " << step;
    ASSERT_EQ(pool.reserved_bytes(), reference.reserved()) << "step " << step;
    ASSERT_EQ(pool.free_ranges(), reference.free_ranges()) << "step " << step;
    if (step % 20 == 0) ASSERT_EQ(chunk_starts(pool), reference.chunks()) << "step " << step;
  }
  // The walk reached OOMs, frees and a pool that released and regrew chunks.
  EXPECT_GT(ooms, 0u);
  EXPECT_GT(frees, 1000u);
  EXPECT_GT(refused_frees, 50u);
}

TEST(SimAsyncPoolReference, DefaultOptionsMatchTheReference) { run_against_reference(PoolConfig{}, 1); }

TEST(SimAsyncPoolReference, ReleaseThresholdZeroMatchesTheReference) {
  PoolConfig config;
  config.release_threshold = 0;
  run_against_reference(config, 2);
}

TEST(SimAsyncPoolReference, StreamOwnedRangesMatchTheReference) {
  PoolConfig config;
  config.release_threshold = 64ull << 20;
  config.reuse_allow_opportunistic = false;
  run_against_reference(config, 3);
}

TEST(SimAsyncPoolReference, NoCrossStreamReuseMatchesTheReference) {
  PoolConfig config;
  config.reuse_follow_event_dependencies = false;
  config.reuse_allow_internal_dependencies = false;
  run_against_reference(config, 4);
}

TEST(SimAsyncPoolReference, EventDependenciesOnlyMatchTheReference) {
  PoolConfig config;
  config.reuse_allow_opportunistic = false;
  config.reuse_allow_internal_dependencies = false;
  run_against_reference(config, 5);
}

TEST(SimAsyncPoolReference, SizeIndexInItsBTreeMatchesTheReference) {
  run_against_reference(PoolConfig{}, 6, true);
  PoolConfig config;
  config.reuse_allow_opportunistic = false;
  config.reuse_allow_internal_dependencies = false;
  run_against_reference(config, 7, true);
}

// The size bins' weak case: tens of thousands of free ranges of one size class in one owner,
// freed in ascending order, so that each insert would walk its whole bin (quadratic). Past 1024
// ranges the index is a B-tree (50,000 ranges: well under a second), and best fit still hands
// them back lowest address first, across the switch.
TEST(SimAsyncPoolReference, TensOfThousandsOfEqualFreeRangesStayFastAndComeBackLowestAddressFirst) {
  constexpr int kRanges = 50000;
  SimAsyncPool pool(1ull << 40);
  std::vector<uint64_t> addresses;
  for (int i = 0; i < 2 * kRanges; ++i) addresses.push_back(*pool.allocate(512, 0, ~uint64_t{0}));
  EXPECT_TRUE(pool.size_index_binned());
  for (int i = 0; i < 2 * kRanges; i += 2) ASSERT_TRUE(pool.free(addresses[i]));  // the live odd ones keep them apart
  EXPECT_FALSE(pool.size_index_binned());
  for (int i = 0; i < 2 * kRanges; i += 2) ASSERT_EQ(pool.allocate(512, 0, ~uint64_t{0}), addresses[i]) << i;
  EXPECT_EQ(pool.used_bytes(), 2ull * kRanges * 512);
}

}  // namespace
}  // namespace memreplay
