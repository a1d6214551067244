// ObservingPolicy: an adaptor (in RMM's sense) around another policy. It forwards every call (every
// do_* hook of policies/policy.h, private pools included) and
// remembers the blocks it handed out, with the requested bytes and stack of the event that asked,
// so the state at a chosen moment (the reserved peak) can be drawn from outside the policy. It can
// also drop empty_cache() calls, to measure what a job's empty_cache costs.
#pragma once

#include <cstdint>
#include <map>
#include <utility>

#include "policies/policy.h"

namespace memreplay::results {

struct LiveBlockInfo {
  uint64_t size = 0;  // bytes handed out
  uint64_t requested = 0;  // bytes asked for
  uint32_t stack = 0;  // the trace's stack id, 0 if none
};

class ObservingPolicy final : public Policy {
 public:
  ObservingPolicy(Policy& inner, bool ignore_empty_cache, bool track_blocks)
      : inner_(inner), ignore_empty_cache_(ignore_empty_cache), track_blocks_(track_blocks) {}

  // The stack of the event about to be fed (set by the caller before each alloc).
  void set_current_stack(uint32_t stack) { current_stack_ = stack; }
  const std::map<uint64_t, LiveBlockInfo>& live_blocks() const { return live_; }
  // The block the last allocate (or allocate_in_pool) handed out: {address, size}; {0, 0} if none.
  std::pair<uint64_t, uint64_t> last_block() const { return last_block_; }  // policy address ->
  uint64_t empty_cache_calls() const { return empty_cache_calls_; }

 private:
  std::optional<Block> do_allocate(uint64_t bytes, StreamId stream) override {
    auto block = inner_.allocate(bytes, stream);
    last_block_ = block ? std::pair{block->address, block->size} : std::pair<uint64_t, uint64_t>{};
    if (block && track_blocks_) live_[block->address] = {block->size, bytes, current_stack_};
    return block;
  }
  bool do_free(uint64_t address, StreamId stream) override {
    inner_.free(address, stream);  // throws PolicyContractError itself for an unknown address
    if (track_blocks_) live_.erase(address);
    return true;
  }
  std::optional<Block> do_allocate_in_pool(uint64_t bytes, StreamId stream, PoolId pool, Capture capture) override {
    auto block = inner_.allocate_in_pool(bytes, stream, pool, capture);
    last_block_ = block ? std::pair{block->address, block->size} : std::pair<uint64_t, uint64_t>{};
    if (block && track_blocks_) live_[block->address] = {block->size, bytes, current_stack_};
    return block;
  }
  void do_release_pool(PoolId pool) override { inner_.release_pool(pool); }
  std::optional<uint64_t> do_adopt_segment_in_pool(uint64_t bytes, StreamId stream, PoolId pool) override {
    return inner_.adopt_segment_in_pool(bytes, stream, pool);
  }
  void do_empty_cache() override {
    ++empty_cache_calls_;
    if (!ignore_empty_cache_) inner_.empty_cache();
  }
  std::optional<uint64_t> do_adopt_segment(uint64_t bytes, StreamId stream) override {
    return inner_.adopt_segment(bytes, stream);
  }
  std::optional<Block> do_adopt_block(uint64_t address, uint64_t size, uint64_t requested, StreamId stream) override {
    auto block = inner_.adopt_block(address, size, requested, stream);
    if (block && track_blocks_) live_[block->address] = {block->size, requested, current_stack_};
    return block;
  }
  void do_stream_event(StreamId stream, uint64_t cuda_event, bool is_wait) override {
    inner_.on_stream_event(stream, cuda_event, is_wait);
  }
  PolicyStats do_stats() const override { return inner_.stats(); }

  Policy& inner_;
  bool ignore_empty_cache_;
  bool track_blocks_;
  uint32_t current_stack_ = 0;
  uint64_t empty_cache_calls_ = 0;
  std::map<uint64_t, LiveBlockInfo> live_;
  std::pair<uint64_t, uint64_t> last_block_;
};

}  // namespace memreplay::results
