// BumpDevice: cudaMalloc as a bump pointer, cudaFree as bookkeeping only: the cheapest device
// that counts (tools/bench/plugin_bench.cpp; the device contract suite runs it too). No VMM, no
// pool: reserve_address and map fail as a device without them does. The Device base counts.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>

#include "policies/device.h"

namespace memreplay::bench {

class BumpDevice final : public Device {
 public:
  explicit BumpDevice(std::optional<uint64_t> capacity = std::nullopt) : Device(1ull << 40, capacity) {}
  uint64_t granularity() const override { return 2 << 20; }

 private:
  std::optional<uint64_t> do_malloc(uint64_t bytes) override {
    const uint64_t address = next_;
    next_ += (bytes + 511) / 512 * 512;
    sizes_[address] = bytes;
    return address;
  }
  std::optional<uint64_t> do_free(uint64_t address) override {
    const auto it = sizes_.find(address);
    if (it == sizes_.end()) return std::nullopt;
    const uint64_t bytes = it->second;
    sizes_.erase(it);
    return bytes;
  }
  std::optional<uint64_t> do_reserve_address(uint64_t) override { return std::nullopt; }
  void do_release_address(uint64_t, uint64_t) override {}
  bool do_map(uint64_t, uint64_t) override { return false; }
  void do_unmap(uint64_t, uint64_t) override {}

  uint64_t next_ = 1ull << 40;
  std::unordered_map<uint64_t, uint64_t> sizes_;
};

}  // namespace memreplay::bench
