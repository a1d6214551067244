// BumpDevice: cudaMalloc as a bump pointer, cudaFree as bookkeeping only: the cheapest device
// that counts (tools/bench/plugin_bench.cpp; the device contract suite runs it too). No VMM, no
// pool: reserve_address and map fail as a device without them does.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>

#include "policies/device.h"

namespace memreplay::bench {

class BumpDevice final : public Device {
 public:
  std::optional<uint64_t> malloc(uint64_t bytes) override {
    const uint64_t address = next_;
    next_ += (bytes + 511) / 512 * 512;
    ++counters_.malloc_calls;
    counters_.add_reserved(bytes);
    sizes_[address] = bytes;
    return address;
  }
  bool free(uint64_t address) override {
    const auto it = sizes_.find(address);
    if (it == sizes_.end()) return false;
    ++counters_.free_calls;
    counters_.remove_reserved(it->second);
    sizes_.erase(it);
    return true;
  }
  std::optional<uint64_t> reserve_address(uint64_t) override { return std::nullopt; }
  void release_address(uint64_t, uint64_t) override {}
  bool map(uint64_t, uint64_t) override { return false; }
  void unmap(uint64_t, uint64_t) override {}
  uint64_t granularity() const override { return 2 << 20; }
  uint64_t total_memory() const override { return 1ull << 40; }
  std::optional<uint64_t> capacity() const override { return std::nullopt; }
  uint64_t free_memory() const override { return 1ull << 40; }
  const DeviceCounters& counters() const override { return counters_; }

 private:
  uint64_t next_ = 1ull << 40;
  DeviceCounters counters_;
  std::unordered_map<uint64_t, uint64_t> sizes_;
};

}  // namespace memreplay::bench
