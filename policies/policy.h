// The Policy interface: an allocator's decisions, and nothing else. A policy receives requests in
// trace order, obtains memory only through its Device, and hands out blocks. The engine (replayer/)
// measures live bytes from what allocate() returns; the Device counts driver calls and reserved
// bytes. Policies never measure themselves, except for decisions only they can see (stats()).
//
// Non-virtual public entry, virtual private hooks (as RMM's device_memory_resource): the public
// functions check the contract once for every policy, then call do_*:
//   allocate(bytes, stream)  bytes > 0, else PolicyContractError; do_allocate's nullopt is an OOM
//                            (counted in stats().ooms), not an error. A request above
//                            kMaxRequestBytes is an OOM here, before any policy rounds it (a
//                            size near 2^64 would wrap to a few bytes in a policy's rounding)
//   free(address, stream)    do_free returns false for an address this policy did not hand out
//                            (or already took back): PolicyContractError, never silence
//   adopt_segment, adopt_block  0 < size <= kMaxRequestBytes and size >= requested
//   allocate_in_pool(bytes, stream, pool, capture)  as allocate(), in a private pool (a CUDA
//                            graph's or a torch.cuda.MemPool's, as the trace names it), with
//                            whether a graph capture was underway as far as the trace says. A
//                            policy that does not keep pools apart itself gets, from the registry,
//                            an instance of itself per private pool (policies/private_pools.h)
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "policies/device.h"
#include "policies/policy_stats.h"

namespace memreplay {

namespace detail {
class PrivatePools;
}  // namespace detail

// A memory pool as a trace names it (proto/event.h's Event::pool): 0 is the default pool.
using PoolId = uint16_t;

// Whether an allocation in a private pool was made while its stream was capturing a CUDA graph, as
// far as the trace says: PyTorch 2.13 runs the last step of its retry ladder for a MemPool's
// allocation outside a capture, where 2.11 skips it in every private pool.
enum class Capture : uint8_t { unknown, capturing, not_capturing };

struct Block {
  uint64_t address = 0;
  uint64_t size = 0;  // bytes handed out, rounding and unsplit slack included ("allocated bytes")
};

// A call that breaks the Policy contract (a zero-byte request, a free of an address the policy
// never handed out). what() is one line; the replay session adds the event index.
class PolicyContractError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

class Policy {
 public:
  // 2^48 bytes (256 TiB): far above any device's memory, and low enough that no policy's
  // rounding or segment arithmetic (sizes rounded up, sums of a few thousand blocks) can
  // overflow 64 bits.
  static constexpr uint64_t kMaxRequestBytes = uint64_t{1} << 48;

  Policy();
  virtual ~Policy();
  Policy(const Policy&) = delete;
  Policy& operator=(const Policy&) = delete;

  // Allocate `bytes` (as requested by the application, > 0) for use on `stream`.
  // nullopt is an out-of-memory result, not an error.
  std::optional<Block> allocate(uint64_t bytes, StreamId stream) {
    if (bytes == 0) [[unlikely]]
      throw PolicyContractError("allocate of 0 bytes (a request must be > 0)");
    if (bytes > kMaxRequestBytes) [[unlikely]] {
      ++ooms_;
      return std::nullopt;
    }
    auto block = do_allocate(bytes, stream);
    if (!block) [[unlikely]]
      ++ooms_;
    return block;
  }
  // `pool` 0 is allocate() itself. Allocations in a private pool are served from that pool's
  // segments only, and their blocks go back to it.
  std::optional<Block> allocate_in_pool(uint64_t bytes, StreamId stream, PoolId pool,
                                        Capture capture = Capture::unknown) {
    if (pool == 0) return allocate(bytes, stream);
    if (bytes == 0) [[unlikely]]
      throw PolicyContractError("allocate of 0 bytes (a request must be > 0)");
    if (bytes > kMaxRequestBytes) [[unlikely]] {
      ++ooms_;
      return std::nullopt;
    }
    auto block = serves_pools_apart_ ? allocate_in_private_pool(bytes, stream, pool, capture)
                                     : do_allocate_in_pool(bytes, stream, pool, capture);
    if (!block) [[unlikely]]
      ++ooms_;
    return block;
  }
  // Return a block allocate() handed out, on the stream that frees it. The block is reusable at
  // once: the engine calls this at the trace's free_completed, after any cross-stream uses ended.
  void free(uint64_t address, StreamId stream) {
    if (private_pools_ != nullptr) [[unlikely]]
      if (free_in_private_pool(address, stream)) return;
    if (!do_free(address, stream)) [[unlikely]]
      unknown_free(address);
  }
  // torch.cuda.empty_cache(): give cached memory back to the device.
  void empty_cache() { do_empty_cache(); }
  // Private pool `pool` was released (its CUDA graphs or MemPool destroyed): PyTorch gives its
  // cached segments back at the next release (empty_cache, the retry path). The engine calls this
  // at the first recorded segment_free of the pool, which only a released pool's release causes.
  void release_pool(PoolId pool) {
    if (pool == 0) return;
    if (serves_pools_apart_)
      release_private_pool(pool);
    else
      do_release_pool(pool);
  }

  // For a policy that does not keep private pools apart itself (PolicyInfo::keeps_pools_apart):
  // from now on each private pool is served by an instance of its own, made by `make` on a view
  // of `device` that gives nothing back while the pool lives (policies/private_pools.h). The
  // registry calls it as it creates the policy.
  void serve_private_pools_apart(std::function<std::unique_ptr<Policy>(Device&)> make, Device& device);

  // Rebuilding an allocator that was already running when the trace starts (ring-buffer traces).
  // adopt_segment: a segment of `bytes` on `stream` existed before the first event; returns the
  // address the policy gave it, or nullopt if this policy has no segments (then the engine
  // adopts blocks with allocate()). adopt_block: carve a live block at exactly [address, +size)
  // inside an adopted segment.
  std::optional<uint64_t> adopt_segment(uint64_t bytes, StreamId stream) {
    if (bytes == 0 || bytes > kMaxRequestBytes)
      throw PolicyContractError("adopt_segment of " + std::to_string(bytes) + " bytes (needs 0 < bytes <= 2^48)");
    return do_adopt_segment(bytes, stream);
  }
  // adopt_segment() of a segment of private pool `pool` (0: the default pool, adopt_segment()).
  std::optional<uint64_t> adopt_segment_in_pool(uint64_t bytes, StreamId stream, PoolId pool) {
    if (pool == 0) return adopt_segment(bytes, stream);
    if (bytes == 0 || bytes > kMaxRequestBytes)
      throw PolicyContractError("adopt_segment of " + std::to_string(bytes) + " bytes (needs 0 < bytes <= 2^48)");
    if (serves_pools_apart_) return adopt_segment_in_private_pool(bytes, stream, pool);
    return do_adopt_segment_in_pool(bytes, stream, pool);
  }
  std::optional<Block> adopt_block(uint64_t address, uint64_t size, uint64_t requested, StreamId stream) {
    if (size == 0 || requested > size || size > kMaxRequestBytes)
      throw PolicyContractError("adopt_block of " + std::to_string(size) + " bytes for a request of " +
                                std::to_string(requested) + " (needs 0 < requested <= size <= 2^48)");
    if (private_pools_ != nullptr)
      if (auto block = adopt_block_in_private_pool(address, size, requested, stream)) return *block;
    return do_adopt_block(address, size, requested, stream);
  }

  // Stream-ordering hints from CUDA-level traces, for policies that use them.
  void on_stream_event(StreamId stream, uint64_t cuda_event, bool is_wait) {
    do_stream_event(stream, cuda_event, is_wait);
  }

  // Counters only the policy can know (retries, its own statistics) and the OOMs the base counted.
  PolicyStats stats() const {
    PolicyStats stats = do_stats();
    if (private_pools_ != nullptr) add_private_pool_stats(stats);
    stats.ooms = ooms_;
    return stats;
  }

 private:
  virtual std::optional<Block> do_allocate(uint64_t bytes, StreamId stream) = 0;
  // False when `address` is not a block this policy handed out and has not taken back.
  virtual bool do_free(uint64_t address, StreamId stream) = 0;
  virtual void do_empty_cache() {}
  virtual void do_release_pool(PoolId pool) { (void)pool; }
  // Policies without private pools serve every pool from their one pool.
  virtual std::optional<Block> do_allocate_in_pool(uint64_t bytes, StreamId stream, PoolId pool, Capture capture) {
    (void)pool, (void)capture;
    return do_allocate(bytes, stream);
  }
  virtual std::optional<uint64_t> do_adopt_segment(uint64_t bytes, StreamId stream) {
    (void)bytes, (void)stream;
    return std::nullopt;
  }
  // Policies without private pools adopt every pool's segments into their one pool.
  virtual std::optional<uint64_t> do_adopt_segment_in_pool(uint64_t bytes, StreamId stream, PoolId pool) {
    (void)pool;
    return do_adopt_segment(bytes, stream);
  }
  virtual std::optional<Block> do_adopt_block(uint64_t address, uint64_t size, uint64_t requested, StreamId stream) {
    (void)address, (void)size, (void)requested, (void)stream;
    return std::nullopt;
  }
  virtual void do_stream_event(StreamId stream, uint64_t cuda_event, bool is_wait) {
    (void)stream, (void)cuda_event, (void)is_wait;
  }
  virtual PolicyStats do_stats() const { return {}; }

  [[noreturn]] static void unknown_free(uint64_t address);

  // Private pools served apart (serve_private_pools_apart), out of line: no hot path reaches them
  // before a private pool's first request.
  std::optional<Block> allocate_in_private_pool(uint64_t bytes, StreamId stream, PoolId pool, Capture capture);
  bool free_in_private_pool(uint64_t address, StreamId stream);
  void release_private_pool(PoolId pool);
  std::optional<uint64_t> adopt_segment_in_private_pool(uint64_t bytes, StreamId stream, PoolId pool);
  std::optional<std::optional<Block>> adopt_block_in_private_pool(uint64_t address, uint64_t size, uint64_t requested,
                                                                  StreamId stream);
  void add_private_pool_stats(PolicyStats& stats) const;

  uint64_t ooms_ = 0;
  // Set by serve_private_pools_apart; the pools themselves are made at their first request.
  std::function<std::unique_ptr<Policy>(Device&)> make_for_pool_;
  Device* pool_device_ = nullptr;
  bool serves_pools_apart_ = false;
  std::unique_ptr<detail::PrivatePools> private_pools_;
};

}  // namespace memreplay
