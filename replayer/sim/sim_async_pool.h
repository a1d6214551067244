// SimAsyncPool: a documented model of the CUDA driver's stream-ordered memory pool
// (cudaMemPool_t behind cudaMallocFromPoolAsync / cudaFreeAsync), for SimDevice.
//
// The driver's placement rules are not published; this model is calibrated on the live
// backend:cudaMallocAsync runs (shared/groundtruth/runs/*.asyncpool.json, H200, driver 580, and
// tests/data/pools/*.asyncpool.json, H100, CUDA 13): see "Calibration" in sim_async_pool.cpp, and
// CudaDevice measures the real pool.
//
// Physical memory. The pool is one range of addresses that grows at its top by whole chunks of
// kChunkBytes (32 MiB): only the shortfall of the request over the free range at the top (if
// any) is new memory, so a large request spans several chunks. Allocations are kAlignment-aligned
// (a request of at least kLargeRequestBytes takes a span rounded up to kLargeRounding) and placed
// best fit: the smallest free range that holds the aligned size, the lowest address
// on a tie, taking the range's front. Freed ranges merge with free neighbours that the same
// streams may reuse. UsedMem counts the bytes asked for (the live runs' UsedMemHigh equals
// PyTorch's requested peak to the byte); ReservedMem counts chunk bytes.
// Size classes. Requests of kSeparateRequestBytes (128 MiB) or more come from a second range of
// their own (kSeparateRangeOffset above the first, the same rules, its own chunks): a huge block
// and the small ones never share a chunk, and a freed huge block is reused only by huge requests.
// ReservedMem is the sum of the two (fitted to the twelve live runs: sim_async_pool.cpp).
//   base                                                      top (end_): grows by 32 MiB chunks
//   | chunk 0          | chunk 1          | chunk 2          |
//   [a1][a2 ][free   ][a3                    ][free         ]
//                                              ^ a request that fits nowhere extends this range
//
// Streams. A block is freed on the stream it was allocated on (cudaFreeAsync there, as PyTorch's
// backend does). Memory freed on stream S is reusable by S at once. Another stream may reuse it when
//   - reuse_allow_opportunistic or reuse_allow_internal_dependencies is set: a replay launches no
//     GPU work, so every free has completed (or can be waited for) by the next allocation; or
//   - reuse_follow_event_dependencies is set and some stream waited on an event recorded on S
//     after the free (simplification: the range then becomes reusable by every stream); or
//   - the device synchronized (synchronize(), trim()).
// Fresh memory is reusable by every stream.
//
// Release. Reserved memory only shrinks at a synchronization: above release_threshold the pool
// returns chunks that lie wholly in free ranges (highest address first) until it is at or under
// the threshold; trim(keep) does the same down to `keep` (torch.cuda.empty_cache() is trim(0)).
// With the threshold at UINT64_MAX (PyTorch's setting) the pool keeps everything until trimmed.
// Released chunks leave a hole; the pool grows at its top again.
//
// Capacity. Growth fails (an OOM the policy sees) when the new chunks do not fit in the room the
// device leaves; the pool neither trims nor retries by itself.
//
// Representation: allocations and free ranges are pieces in address order
// (sim_async_pool_pieces.h), so a freed block merges with its neighbours through two links; the
// free ones are also in a size index for best fit (sim_async_pool_index.h); one map finds a live
// allocation by address. Invariant: no two free ranges of one owner touch (they are one range).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include <absl/container/btree_set.h>
#include <absl/container/flat_hash_map.h>

#include "policies/detail/address_map.h"
#include "policies/device.h"
#include "replayer/sim/sim_async_pool_index.h"
#include "replayer/sim/sim_async_pool_pieces.h"

namespace memreplay {

class SimAsyncPool {
 public:
  static constexpr uint64_t kChunkBytes = 32ull << 20;
  static constexpr uint64_t kAlignment = 512;
  // Requests of 2 MiB or more take whole MiBs (fitted to the live runs: sim_async_pool.cpp).
  static constexpr uint64_t kLargeRequestBytes = 2ull << 20;
  static constexpr uint64_t kLargeRounding = 1ull << 20;
  // Requests of 128 MiB or more come from a range of their own, this far above the first.
  static constexpr uint64_t kSeparateRequestBytes = 128ull << 20;
  static constexpr uint64_t kSeparateRangeOffset = 1ull << 39;

  // The pool's addresses start at `base_address` and grow upwards (one chunk after another).
  explicit SimAsyncPool(uint64_t base_address);

  void configure(const PoolConfig& config) {
    config_ = config;
    if (huge_) huge_->configure(config);
  }
  const PoolConfig& config() const { return config_; }

  // cudaMallocFromPoolAsync: nullopt when no free range fits and growing the pool would take
  // more than `growth_room` bytes.
  std::optional<uint64_t> allocate(uint64_t bytes, StreamId stream, uint64_t growth_room);
  // cudaFreeAsync, on the stream the block was allocated on: false, with nothing freed, for an
  // address that is not a live allocation of this pool.
  bool free(uint64_t address);
  // cudaEventRecord / cudaStreamWaitEvent of the trace's event `event_id`.
  void stream_event(StreamId stream, uint64_t event_id, bool is_wait);
  // Device synchronize: every free completes; chunks above the release threshold go back.
  void synchronize();
  // cudaMemPoolTrimTo after a synchronize: wholly free chunks go back until reserved <= keep.
  void trim(uint64_t keep_bytes);

  uint64_t reserved_bytes() const { return reserved_ + (huge_ ? huge_->reserved_bytes() : 0); }
  uint64_t used_bytes() const { return used_ + (huge_ ? huge_->used_bytes() : 0); }
  // Chunks added so far (each one a growth of the pool's reserved memory).
  uint64_t grow_count() const { return grow_count_ + (huge_ ? huge_->grow_count() : 0); }
  // Whether the size index is still in size bins (false once it held over 1024 free ranges).
  bool size_index_binned() const { return by_size_.binned() && (!huge_ || huge_->size_index_binned()); }
  // The pool's mapped address ranges [start, end), sorted: what it holds physically.
  std::vector<std::pair<uint64_t, uint64_t>> chunk_ranges() const;

  // Who may reuse a free range: one stream, or every stream.
  static constexpr StreamId kAnyStream = ~StreamId{0};
  struct FreeRangeView {
    uint64_t start, end;
    StreamId owner;  // kAnyStream, or the only stream that may reuse it yet
    friend bool operator==(const FreeRangeView&, const FreeRangeView&) = default;
  };
  // Its free ranges in address order (for tests: no two of one owner touch).
  std::vector<FreeRangeView> free_ranges() const;

 private:
  using Piece = SimAsyncPoolPiece;
  struct OneRange {};
  // A range of one size class (no range of its own for huge requests).
  SimAsyncPool(uint64_t base_address, OneRange) : base_(base_address), end_(base_address) {}

  std::optional<uint64_t> allocate_here(uint64_t bytes, StreamId stream, uint64_t growth_room);
  bool free_here(uint64_t address);
  void stream_event_here(StreamId stream, uint64_t event_id, bool is_wait);
  // Both ranges down to `keep_bytes` in all, the highest addresses (the huge range's) first.
  void release_both(uint64_t keep_bytes);

  Piece* best_fit(uint64_t span, StreamId stream) const;
  bool grow(uint64_t span, StreamId stream, uint64_t growth_room);
  // `piece` is free, in no index: it joins the touching free ranges of its owner, or the index.
  void merge_free(Piece* piece);
  // A free range's new bounds (and free_seq), kept in the size index.
  void reshape(Piece* range, uint64_t start, uint64_t end, uint64_t free_seq);
  void remove_free(Piece* range);  // out of the index and the pieces
  void share(Piece* range);  // reusable by every stream from now on
  void share_all_free();
  std::vector<Piece*> stream_owned_ranges() const;  // the free ranges not yet every stream's
  void release_free_chunks(uint64_t keep_bytes);

  PoolConfig config_;
  std::unique_ptr<SimAsyncPool> huge_;  // the range of requests >= kSeparateRequestBytes
  uint64_t base_;
  uint64_t end_;  // one past the highest chunk ever mapped: the pool grows here
  absl::btree_set<uint64_t> chunks_;  // mapped chunks (kChunkBytes each) by start address
  SimAsyncPoolPieces pieces_;
  SimAsyncPoolIndex<Piece> by_size_;  // the free pieces
  detail::AddressMap<Piece*> live_;  // the live pieces by address
  uint64_t owned_ranges_ = 0;  // free ranges only one stream may reuse yet (often none)
  absl::flat_hash_map<uint64_t, std::pair<StreamId, uint64_t>> events_;  // event -> (stream, seq)
  uint64_t seq_ = 0;
  uint64_t reserved_ = 0;
  uint64_t used_ = 0;
  uint64_t grow_count_ = 0;
};

}  // namespace memreplay
