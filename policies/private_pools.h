// Private pools for the policies that do not keep them apart themselves (every policy but the
// `pytorch` family and cuda_async; PolicyInfo::keeps_pools_apart). A CUDA graph replays the
// addresses it captured: a block its capture allocated and freed is still the graph's, so it may
// not be handed to other work, and its pages may not be unmapped or freed, while the graph lives.
// PyTorch gives each graph's (or MemPool's) private pool segments of its own for that reason.
//
//   PrivatePools   one instance of the policy per private pool, made by the registry from the
//                  same spec; requests and frees of a pool go to its instance; a pool released
//                  (its graphs destroyed) goes back to the device once its last block is freed
//   PoolDevice     the instance's device: the real one, except that nothing goes back while the
//                  pool lives: an unmap, a free or a reservation's release waits until the pool
//                  is gone, and a page mapped again where it still is costs no driver call
//
// Both sides of a run do this the same way, the simulator's replay and the live allocator, so a
// live run's trace still replays to its own figures. The device counts what really happens: a
// page the instance moved is held at both places while the pool lives, and counted so.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include <absl/container/flat_hash_map.h>

#include "policies/detail/interval_set.h"
#include "policies/device.h"
#include "policies/policy.h"

namespace memreplay::detail {

class PoolDevice final : public Device {
 public:
  explicit PoolDevice(Device& device);
  // Gives back everything the pool's instance held or gave up (its pages, mallocs and
  // reservations): the pool is gone, and so is every graph that used them. Once; a PoolDevice
  // destroyed without it leaves its memory to the device's owner, as a policy's destructor may.
  void give_back();

  uint64_t granularity() const override { return device_.granularity(); }
  bool gives_back() const override { return false; }

 private:
  std::optional<uint64_t> do_malloc(uint64_t bytes) override;
  std::optional<uint64_t> do_free(uint64_t address) override;
  std::optional<uint64_t> do_reserve_address(uint64_t bytes) override;
  void do_release_address(uint64_t address, uint64_t bytes) override;
  bool do_map(uint64_t address, uint64_t bytes) override;
  void do_unmap(uint64_t address, uint64_t bytes) override;
  void do_synchronize() override { device_.synchronize(); }
  void do_stream_event(StreamId stream, uint64_t event_id, bool is_wait) override {
    device_.stream_event(stream, event_id, is_wait);
  }
  uint64_t do_free_memory() const override { return device_.free_memory(); }

  Device& device_;
  absl::flat_hash_map<uint64_t, uint64_t> mallocs_;  // live on the device: address -> bytes
  std::vector<uint64_t> freed_mallocs_;  // freed by the instance, still held
  std::map<uint64_t, uint64_t> reservations_;  // on the device, released by the instance or not
  IntervalSet held_pages_;  // unmapped by the instance, still mapped on the device
};

class PrivatePools {
 public:
  using MakePolicy = std::function<std::unique_ptr<Policy>(Device&)>;
  PrivatePools(MakePolicy make, Device& device) : make_(std::move(make)), device_(device) {}
  ~PrivatePools();

  std::optional<Block> allocate(uint64_t bytes, StreamId stream, PoolId pool, Capture capture);
  // False when `address` is not a live block of a private pool.
  bool free(uint64_t address, StreamId stream);
  // The pool's graphs are gone: its memory goes back once its blocks are freed.
  void release(PoolId pool);
  // Adopting the starting state of a trace (Policy::adopt_segment_in_pool, adopt_block): a block
  // inside a pool's adopted segment goes to that pool's instance.
  std::optional<uint64_t> adopt_segment(uint64_t bytes, StreamId stream, PoolId pool);
  // nullopt when `address` lies in no pool's adopted segment (the default pool's block).
  std::optional<std::optional<Block>> adopt_block(uint64_t address, uint64_t size, uint64_t requested, StreamId stream);
  // The instances' retries, added to the default pool's.
  void add_stats(PolicyStats& stats) const;

 private:
  struct Instance {
    std::unique_ptr<PoolDevice> device;
    std::unique_ptr<Policy> policy;
    uint64_t live_blocks = 0;
    bool released = false;
  };
  Instance& instance(PoolId pool);
  void retire_if_done(PoolId pool);

  MakePolicy make_;
  Device& device_;
  std::map<PoolId, Instance> instances_;
  absl::flat_hash_map<uint64_t, PoolId> pool_of_block_;  // live private-pool blocks
  std::map<uint64_t, std::pair<uint64_t, PoolId>> adopted_segments_;  // start -> (end, pool)
  uint64_t retired_retries_ = 0;
};

}  // namespace memreplay::detail
