// SimDevice: a GPU without a GPU. Deterministic, CPU only, with a capacity and a model of the
// driver's address assignment.
//
// Addresses: cudaMalloc's are where the trace recorded them while the replay makes the trace's own
// cudaMalloc/cudaFree calls (recorded_placement.h), then from DriverAddressModel
// (driver_address_model.h), fitted to where the real driver put PyTorch's segments. VMM reservations
// (cuMemAddressReserve) come from a separate, higher window bump-allocated upwards, as the driver keeps them apart from
// cudaMalloc's heap. Only the relative order of addresses matters to the policies (best fit breaks ties by address).
//
// The stream-ordered pool (cudaMallocFromPoolAsync) is SimAsyncPool's model, in a third window
// below the heap; its reserved memory counts towards reserved_bytes and the capacity.
#pragma once

#include <cstdint>
#include <optional>

#include <absl/container/btree_map.h>

#include "policies/device.h"
#include "replayer/sim/driver_address_model.h"
#include "replayer/sim/recorded_placement.h"
#include "replayer/sim/sim_async_pool.h"

namespace memreplay {

inline constexpr uint64_t kH200TotalMemory = 150'109'880'320ull;

class SimDevice final : public Device {
 public:
  struct Options {
    uint64_t total_memory = kH200TotalMemory;
    std::optional<uint64_t> capacity;  // per-process cap; a malloc over it fails (map: see map())
    uint64_t granularity = 2ull << 20;
    bool follow_recorded_placement = true;  // else the model places every cudaMalloc
  };
  explicit SimDevice(Options options);

  std::optional<uint64_t> malloc(uint64_t bytes) override;
  bool free(uint64_t address) override;
  std::optional<uint64_t> reserve_address(uint64_t bytes) override;
  void release_address(uint64_t address, uint64_t bytes) override;
  bool map(uint64_t address, uint64_t bytes) override;
  void unmap(uint64_t address, uint64_t bytes) override;

  uint64_t granularity() const override { return options_.granularity; }
  uint64_t total_memory() const override { return options_.total_memory; }
  std::optional<uint64_t> capacity() const override { return options_.capacity; }
  uint64_t free_memory() const override;
  const DeviceCounters& counters() const override { return counters_; }
  std::vector<std::pair<uint64_t, uint64_t>> backed_ranges() const override;

  bool configure_pool(const PoolConfig& config) override;
  std::optional<uint64_t> pool_malloc_async(uint64_t bytes, StreamId stream) override;
  bool pool_free_async(uint64_t address) override;
  void pool_trim(uint64_t keep_bytes) override;
  void synchronize() override;
  void stream_event(StreamId stream, uint64_t event_id, bool is_wait) override;
  void recorded_malloc(uint64_t address, uint64_t bytes) override { placement_.recorded_malloc(address, bytes); }
  void recorded_free(uint64_t address) override { placement_.recorded_free(address); }
  bool left_recorded_placement() const override { return placement_.followed() && !placement_.in_step(); }

 private:
  bool has_room_for(uint64_t bytes) const;
  // A recorded address the heap can take: inside no window of the simulator's own and clear of
  // every live segment placed there (a hostile trace may record anything).
  bool recorded_range_is_free(uint64_t address, uint64_t bytes) const;
  void update_pool_counters();  // after every pool operation
  void update_pool_reserved();  // after one that grew or released chunks

  Options options_;
  const uint64_t limit_;  // the per-process cap, or the whole device's memory
  DeviceCounters counters_;
  // cudaMalloc heap: where allocations go, and the bytes asked for (counted as reserved) of each.
  DriverAddressModel heap_;
  // Segments placed where the trace recorded them (start -> end), outside the model's window.
  RecordedPlacement placement_;
  absl::btree_map<uint64_t, uint64_t> recorded_live_;
  // Mapped pages of VMM reservations: start -> end, adjacent ranges merged.
  absl::btree_map<uint64_t, uint64_t> mapped_;
  uint64_t next_reservation_;
  SimAsyncPool pool_;
};

}  // namespace memreplay
