// The Device a policy allocates from: the only way a policy touches (simulated or real) GPU memory.
// Implementations live in replayer/ (SimDevice, CudaDevice). A Device counts every driver-level
// call and the bytes it holds, so every policy is measured the same way and none can misreport.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include <absl/container/btree_map.h>

#include "policies/detail/interval_set.h"

namespace memreplay {

using StreamId = uint64_t;  // raw stream handle from the trace; 0 = legacy default stream

// Driver-level call counters, kept by the device, never by a policy.
struct DeviceCounters {
  uint64_t malloc_calls = 0;  // successful cudaMalloc
  uint64_t free_calls = 0;  // cudaFree
  uint64_t reserve_calls = 0;  // cuMemAddressReserve
  uint64_t release_calls = 0;  // cuMemAddressFree
  uint64_t map_calls = 0;  // successful map() calls (each may map several pages)
  uint64_t unmap_calls = 0;  // unmap() calls
  uint64_t failed_calls = 0;  // malloc()/map()/pool_malloc_async() that failed for lack of memory
  uint64_t reserved_bytes = 0;  // physical bytes held now: cudaMalloc'd + mapped + pool reserved
  uint64_t reserved_peak = 0;
  uint64_t reserved_bytes_allocated = 0;  // cumulative increases of reserved_bytes
  uint64_t reserved_bytes_freed = 0;  // cumulative decreases
  // Stream-ordered pool (cudaMemPool_t), when a policy uses one.
  uint64_t pool_malloc_calls = 0;  // successful cudaMallocFromPoolAsync
  uint64_t pool_free_calls = 0;  // cudaFreeAsync
  uint64_t pool_grow_calls = 0;  // pool allocations that grew the pool's reserved memory
  uint64_t pool_trim_calls = 0;  // cudaMemPoolTrimTo
  uint64_t pool_reserved_bytes = 0;  // ReservedMemCurrent (also part of reserved_bytes)
  uint64_t pool_reserved_peak = 0;  // ReservedMemHigh
  uint64_t pool_used_bytes = 0;  // UsedMemCurrent: bytes asked for by live pool allocations
  uint64_t pool_used_peak = 0;  // UsedMemHigh
  // Wall time spent inside driver calls, in ns (0 on the simulator, which has no driver).
  uint64_t device_call_ns = 0;

  friend bool operator==(const DeviceCounters&, const DeviceCounters&) = default;
};

// Attributes of a stream-ordered memory pool, as cudaMemPoolSetAttribute names them. The defaults
// are what PyTorch's backend:cudaMallocAsync sets (the driver's own release threshold is 0).
struct PoolConfig {
  // Reserved bytes the pool keeps when the device synchronizes; above it, free memory goes back.
  uint64_t release_threshold = UINT64_MAX;
  // Reuse memory freed on another stream once a stream-order dependency (event wait) exists.
  bool reuse_follow_event_dependencies = true;
  // Reuse memory whose free has already completed, without any dependency.
  bool reuse_allow_opportunistic = true;
  // Let the driver insert a dependency on the freeing stream to reuse its memory.
  bool reuse_allow_internal_dependencies = true;
  friend bool operator==(const PoolConfig&, const PoolConfig&) = default;
};

// Non-virtual public entry, virtual private hooks (as Policy, policy.h): every public call below
// checks the contract and counts, once, in this base, then calls its do_* hook; no device touches
// the counters. What the base enforces, for every device, policy and plugin:
//   capacity   a malloc, map or pool growth that would take reserved_bytes past limit() (the
//              per-process cap, else the whole device) fails (nullopt / false, failed_calls + 1)
//              without reaching the hook (so without a driver call); only maps that a policy's
//              own cap admitted (admit()) may end past it, by less than one call's pages
//   pages      map and unmap take whole pages (granularity()) inside one live reservation; a map
//              of pages already mapped, an unmap of pages not mapped, and a release of a
//              reservation that is not one or still has pages mapped are caller bugs: logic_error
//   bytes      reserved_bytes = live malloc() bytes + mapped bytes + the pool's reserved bytes;
//              reserved_bytes_allocated - reserved_bytes_freed == reserved_bytes at every step
// A device that models a driver implements the hooks; one with a real driver also asks the base
// to time them (time_driver_calls()) into counters().device_call_ns.
class Device {
 public:
  virtual ~Device() = default;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  // cudaMalloc: nullopt when the device (or its capacity) has no room, or for 0 bytes.
  std::optional<uint64_t> malloc(uint64_t bytes);
  // cudaFree of an address malloc() returned. False, with nothing changed and no driver call, for
  // an address that is not a live malloc() (never handed out, or freed already), as
  // pool_free_async answers: every device knows its live allocations, so a policy need not keep
  // a second map only to refuse a foreign free (passthrough returns this false as its own). A
  // caller that frees only what it holds goes through free_held() below. A real device's failure
  // (a CUDA error) still throws.
  [[nodiscard]] bool free(uint64_t address);

  // Virtual memory management (cuMemAddressReserve / cuMemAddressFree): address space only.
  // nullopt when the address space is exhausted (or for 0 bytes, or more than 2^56).
  std::optional<uint64_t> reserve_address(uint64_t bytes);
  // `address` and `bytes` as reserve_address() gave and took them; no page may be mapped in it.
  void release_address(uint64_t address, uint64_t bytes);
  // Back [address, address+bytes) with physical pages (cuMemCreate + cuMemMap + cuMemSetAccess
  // per page); counted as one call. False, with nothing mapped, when the device or its capacity
  // has no room: the cap holds for mapped pages as for cudaMalloc, but for what admit() granted.
  bool map(uint64_t address, uint64_t bytes);
  // Unmap and release the physical pages of [address, address+bytes), which map() backed; one call.
  void unmap(uint64_t address, uint64_t bytes);
  // The per-process cap as an allocator that maps applies it itself, before it maps: PyTorch's
  // alloc_block admits a request when reserved + its segment size <= the cap, then maps whole
  // pages (large_segment_size, 20 MiB) that may end past the cap, and the real driver grants them.
  // True when `bytes` more fit under limit(); the map() calls that follow are then granted, even
  // past the cap, while reserved bytes are below what was admitted (so by less than one call's
  // pages), never past total_memory(). The cap the policy applies and the device's agree.
  bool admit(uint64_t bytes);

  // Physical allocation granularity for map() (2 MiB on current NVIDIA GPUs).
  virtual uint64_t granularity() const = 0;
  // False where what a policy unmaps or frees stays held anyway (a private pool's device while the
  // pool lives, policies/private_pools.h): moving pages there saves nothing.
  virtual bool gives_back() const { return true; }
  // Memory of the whole device (cudaDeviceProp::totalGlobalMem).
  uint64_t total_memory() const { return total_memory_; }
  // The per-process cap in bytes (set_per_process_memory_fraction), if one is set.
  std::optional<uint64_t> capacity() const { return capacity_; }
  // What reserved_bytes may reach: the capacity, or the whole device.
  uint64_t limit() const { return limit_; }
  // Bytes a further malloc could still get (cudaMemGetInfo's free, under the capacity).
  uint64_t free_memory() const;

  // The same object for the device's whole life (the engine keeps the reference).
  const DeviceCounters& counters() const { return counters_; }

  // Stream-ordered allocation from the device's one memory pool (cudaMemPoolCreate +
  // cudaMallocFromPoolAsync), optional: a device without pools keeps the hooks' defaults, and
  // configure_pool() returning false tells the policy that needs one to refuse to start.
  // configure_pool creates the pool (or sets the attributes of the existing one).
  bool configure_pool(const PoolConfig& config) { return do_configure_pool(config); }
  // cudaMallocFromPoolAsync of `bytes` on `stream`: nullopt when the pool cannot grow (OOM).
  std::optional<uint64_t> pool_malloc_async(uint64_t bytes, StreamId stream);
  // cudaFreeAsync of an address pool_malloc_async returned, on the stream it was allocated on (as
  // PyTorch's backend frees, whichever stream frees it): the device knows each live pool
  // allocation, so a policy keeps no map of its own. False, with nothing freed, for an address
  // that is not a live pool allocation (the policy's contract check).
  bool pool_free_async(uint64_t address);
  // Synchronize the device, then cudaMemPoolTrimTo(pool, keep_bytes).
  void pool_trim(uint64_t keep_bytes);
  // cudaDeviceSynchronize: every stream-ordered free has completed afterwards, and the pool
  // returns memory above its release threshold.
  void synchronize();
  // cudaEventRecord (is_wait false) or cudaStreamWaitEvent (true) of the trace's event `event_id`
  // on `stream`: the stream-order edges a pool follows to reuse memory across streams.
  void stream_event(StreamId stream, uint64_t event_id, bool is_wait) {
    timed([&] { do_stream_event(stream, event_id, is_wait); });
  }

  // The trace's own record of the driver, fed in trace order as the replay reads it: its cudaMalloc
  // of `bytes` that returned `address`, and its cudaFree of `address`. A device that models where
  // the driver puts memory may follow it (SimDevice: replayer/recorded_placement.h); a real GPU
  // places its own.
  virtual void recorded_malloc(uint64_t address, uint64_t bytes) { (void)address, (void)bytes; }
  virtual void recorded_free(uint64_t address) { (void)address; }
  // True when addresses it handed out followed that record and a later call could not (the replay
  // made other calls than the trace): its placement is then a mix of two rules, and a replay that
  // wants one rule throughout runs again with DeviceRequest::follow_recorded_placement off.
  virtual bool left_recorded_placement() const { return false; }

  // The physically backed address ranges [start, end), sorted: cudaMalloc'd ranges and mapped
  // pages. The engine uses them to measure free-space fragmentation; empty if unknown.
  virtual std::vector<std::pair<uint64_t, uint64_t>> backed_ranges() const { return {}; }

 protected:
  Device(uint64_t total_memory, std::optional<uint64_t> capacity) { set_memory(total_memory, capacity); }
  // Before any replay holds its counters() (a device made by a factory function, say).
  Device(Device&&) = default;
  // For a device that learns its memory after construction (a real GPU, from its driver).
  void set_memory(uint64_t total_memory, std::optional<uint64_t> capacity);
  // The base times every hook into counters().device_call_ns (a real driver's calls).
  void time_driver_calls() { times_calls_ = true; }
  // The mapped pages, merged: every device's mapped part of backed_ranges().
  const detail::IntervalSet& mapped_ranges() const { return mapped_; }

 private:
  // The hooks. Each is called only for a call the base found within the contract and the capacity.
  virtual std::optional<uint64_t> do_malloc(uint64_t bytes) = 0;  // nullopt: out of memory
  // The bytes malloc() got for `address`, now freed; nullopt, with nothing changed, when
  // `address` is not a live malloc().
  virtual std::optional<uint64_t> do_free(uint64_t address) = 0;
  virtual std::optional<uint64_t> do_reserve_address(uint64_t bytes) = 0;  // nullopt: no VA left
  virtual void do_release_address(uint64_t address, uint64_t bytes) = 0;
  virtual bool do_map(uint64_t address, uint64_t bytes) = 0;  // false: out of memory
  virtual void do_unmap(uint64_t address, uint64_t bytes) = 0;
  virtual bool do_configure_pool(const PoolConfig& config) {
    (void)config;
    return false;
  }
  // `growth_room`: the most its reserved memory may grow by in this call.
  virtual std::optional<uint64_t> do_pool_malloc_async(uint64_t bytes, StreamId stream, uint64_t growth_room) {
    (void)bytes, (void)stream, (void)growth_room;
    return std::nullopt;
  }
  // The bytes pool_malloc_async asked for at `address`, now freed; nullopt when not a live one.
  virtual std::optional<uint64_t> do_pool_free_async(uint64_t address) {
    (void)address;
    return std::nullopt;
  }
  virtual void do_pool_trim(uint64_t keep_bytes) { (void)keep_bytes; }
  virtual void do_synchronize() {}
  virtual void do_stream_event(StreamId stream, uint64_t event_id, bool is_wait) {
    (void)stream, (void)event_id, (void)is_wait;
  }
  // The pool's ReservedMemCurrent, read after every call that may change it.
  virtual uint64_t do_pool_reserved_bytes() const { return 0; }
  // Free memory the hardware itself reports, beyond the base's capacity accounting.
  virtual uint64_t do_free_memory() const { return UINT64_MAX; }

  uint64_t room() const { return limit_ - std::min(limit_, counters_.reserved_bytes); }
  void add_reserved(uint64_t bytes);
  void remove_reserved(uint64_t bytes);
  // Whole pages inside one live reservation, else a logic_error naming `call`.
  void check_pages(const char* call, uint64_t address, uint64_t bytes) const;
  void after_pool_call();  // the pool's reserved bytes into the counters
  template <class Call>
  auto timed(Call call) -> decltype(call());

  DeviceCounters counters_;
  uint64_t total_memory_ = 0;
  std::optional<uint64_t> capacity_;
  uint64_t limit_ = 0;
  bool times_calls_ = false;
  uint64_t admitted_up_to_ = 0;  // reserved bytes the last admit() allows maps up to; 0: none
  absl::btree_map<uint64_t, uint64_t> reservations_;  // live reservation start -> bytes
  detail::IntervalSet mapped_;
};

template <class Call>
auto Device::timed(Call call) -> decltype(call()) {
  if (!times_calls_) [[likely]]
    return call();
  struct Clock {
    uint64_t& total_ns;
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
    ~Clock() {
      total_ns += static_cast<uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
    }
  } clock{counters_.device_call_ns};
  return call();
}

inline std::optional<uint64_t> Device::malloc(uint64_t bytes) {
  if (bytes == 0 || bytes > room()) [[unlikely]] {
    ++counters_.failed_calls;
    return std::nullopt;
  }
  const std::optional<uint64_t> address = timed([&] { return do_malloc(bytes); });
  if (!address) [[unlikely]] {
    ++counters_.failed_calls;
    return std::nullopt;
  }
  ++counters_.malloc_calls;
  add_reserved(bytes);
  return address;
}

inline bool Device::free(uint64_t address) {
  const uint64_t call_ns = counters_.device_call_ns;
  const std::optional<uint64_t> bytes = timed([&] { return do_free(address); });
  if (!bytes) [[unlikely]] {
    counters_.device_call_ns = call_ns;  // refused before the driver: the call changes nothing
    return false;
  }
  ++counters_.free_calls;
  remove_reserved(*bytes);
  return true;
}

inline void Device::add_reserved(uint64_t bytes) {
  counters_.reserved_bytes += bytes;
  counters_.reserved_bytes_allocated += bytes;
  if (counters_.reserved_bytes > counters_.reserved_peak) counters_.reserved_peak = counters_.reserved_bytes;
}

inline void Device::remove_reserved(uint64_t bytes) {
  counters_.reserved_bytes -= bytes;
  counters_.reserved_bytes_freed += bytes;
}

namespace detail {
[[noreturn]] void throw_refused_free(uint64_t address);
}  // namespace detail

// Device::free for a caller that frees only addresses it got from malloc() and still holds (every
// caching policy, the plugin bridge): a refusal there is the caller's own bookkeeping gone wrong,
// a bug and never a result, so it throws std::logic_error naming the address.
inline void free_held(Device& device, uint64_t address) {
  if (!device.free(address)) [[unlikely]]
    detail::throw_refused_free(address);
}

}  // namespace memreplay
