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
// Counting, the capacity and the page checks are the Device base's (policies/device.h).
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
    std::optional<uint64_t> capacity;  // per-process cap: a malloc, map or pool growth past it fails
    uint64_t granularity = 2ull << 20;
    bool follow_recorded_placement = true;  // else the model places every cudaMalloc
  };
  explicit SimDevice(Options options);

  uint64_t granularity() const override { return options_.granularity; }
  std::vector<std::pair<uint64_t, uint64_t>> backed_ranges() const override;
  void recorded_malloc(uint64_t address, uint64_t bytes) override { placement_.recorded_malloc(address, bytes); }
  void recorded_free(uint64_t address) override { placement_.recorded_free(address); }
  bool left_recorded_placement() const override { return placement_.followed() && !placement_.in_step(); }

 private:
  std::optional<uint64_t> do_malloc(uint64_t bytes) override;
  std::optional<uint64_t> do_free(uint64_t address) override;
  std::optional<uint64_t> do_reserve_address(uint64_t bytes) override;
  void do_release_address(uint64_t, uint64_t) override {}
  bool do_map(uint64_t, uint64_t) override { return true; }  // the base's capacity is the only limit
  void do_unmap(uint64_t, uint64_t) override {}
  bool do_configure_pool(const PoolConfig& config) override;
  std::optional<uint64_t> do_pool_malloc_async(uint64_t bytes, StreamId stream, uint64_t growth_room) override;
  std::optional<uint64_t> do_pool_free_async(uint64_t address) override;
  void do_pool_trim(uint64_t keep_bytes) override { pool_.trim(keep_bytes); }
  void do_synchronize() override { pool_.synchronize(); }
  void do_stream_event(StreamId stream, uint64_t event_id, bool is_wait) override {
    pool_.stream_event(stream, event_id, is_wait);
  }
  uint64_t do_pool_reserved_bytes() const override { return pool_.reserved_bytes(); }

  // A recorded address the heap can take: inside no window of the simulator's own and clear of
  // every live segment placed there (a hostile trace may record anything).
  bool recorded_range_is_free(uint64_t address, uint64_t bytes) const;

  Options options_;
  // cudaMalloc heap: where allocations go, and the bytes asked for (counted as reserved) of each.
  DriverAddressModel heap_;
  // Segments placed where the trace recorded them (start -> end), outside the model's window.
  RecordedPlacement placement_;
  absl::btree_map<uint64_t, uint64_t> recorded_live_;
  uint64_t next_reservation_;
  SimAsyncPool pool_;
};

}  // namespace memreplay
