// The Device a policy allocates from: the only way a policy touches (simulated or real) GPU memory.
// Implementations live in replayer/ (SimDevice, CudaDevice). A Device counts every driver-level
// call and the bytes it holds, so every policy is measured the same way and none can misreport.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

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

  // Every change of reserved_bytes goes through these two, on every device.
  void add_reserved(uint64_t bytes) {
    reserved_bytes += bytes;
    reserved_bytes_allocated += bytes;
    if (reserved_bytes > reserved_peak) reserved_peak = reserved_bytes;
  }
  void remove_reserved(uint64_t bytes) {
    reserved_bytes -= bytes;
    reserved_bytes_freed += bytes;
  }
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

class Device {
 public:
  virtual ~Device() = default;

  // cudaMalloc: nullopt when the device (or its capacity) has no room.
  virtual std::optional<uint64_t> malloc(uint64_t bytes) = 0;
  // cudaFree of an address malloc() returned. False, with nothing changed and no driver call, for
  // an address that is not a live malloc() (never handed out, or freed already), as
  // pool_free_async answers: every device knows its live allocations, so a policy need not keep
  // a second map only to refuse a foreign free (passthrough returns this false as its own). A
  // caller that frees only what it holds goes through free_held() below. A real device's failure
  // (a CUDA error) still throws.
  [[nodiscard]] virtual bool free(uint64_t address) = 0;

  // Virtual memory management (cuMemAddressReserve / cuMemAddressFree): address space only.
  virtual std::optional<uint64_t> reserve_address(uint64_t bytes) = 0;
  virtual void release_address(uint64_t address, uint64_t bytes) = 0;
  // Back [address, address+bytes) with physical pages (cuMemCreate + cuMemMap + cuMemSetAccess
  // per page); counted as one call. False, with nothing mapped, when the device has no room.
  // The per-process cap is not checked here: a policy that maps applies it (as PyTorch does).
  virtual bool map(uint64_t address, uint64_t bytes) = 0;
  // Unmap and release the physical pages of [address, address+bytes); one call.
  virtual void unmap(uint64_t address, uint64_t bytes) = 0;

  // Physical allocation granularity for map() (2 MiB on current NVIDIA GPUs).
  virtual uint64_t granularity() const = 0;
  // Memory of the whole device (cudaDeviceProp::totalGlobalMem).
  virtual uint64_t total_memory() const = 0;
  // The per-process cap in bytes (set_per_process_memory_fraction), if one is set.
  virtual std::optional<uint64_t> capacity() const = 0;
  // Bytes a further malloc could still get (cudaMemGetInfo's free).
  virtual uint64_t free_memory() const = 0;

  // The same object for the device's whole life (the engine keeps the reference).
  virtual const DeviceCounters& counters() const = 0;

  // Stream-ordered allocation from the device's one memory pool (cudaMemPoolCreate +
  // cudaMallocFromPoolAsync), optional: a device without pools keeps these defaults, and
  // configure_pool() returning false tells the policy that needs one to refuse to start.
  // configure_pool creates the pool (or sets the attributes of the existing one).
  virtual bool configure_pool(const PoolConfig& config) {
    (void)config;
    return false;
  }
  // cudaMallocFromPoolAsync of `bytes` on `stream`: nullopt when the pool cannot grow (OOM).
  virtual std::optional<uint64_t> pool_malloc_async(uint64_t bytes, StreamId stream) {
    (void)bytes, (void)stream;
    return std::nullopt;
  }
  // cudaFreeAsync of an address pool_malloc_async returned, on the stream it was allocated on (as
  // PyTorch's backend frees, whichever stream frees it): the device knows each live pool
  // allocation, so a policy keeps no map of its own. False, with nothing freed, for an address
  // that is not a live pool allocation (the policy's contract check).
  virtual bool pool_free_async(uint64_t address) {
    (void)address;
    return false;
  }
  // Synchronize the device, then cudaMemPoolTrimTo(pool, keep_bytes).
  virtual void pool_trim(uint64_t keep_bytes) { (void)keep_bytes; }
  // cudaDeviceSynchronize: every stream-ordered free has completed afterwards, and the pool
  // returns memory above its release threshold.
  virtual void synchronize() {}
  // cudaEventRecord (is_wait false) or cudaStreamWaitEvent (true) of the trace's event `event_id`
  // on `stream`: the stream-order edges a pool follows to reuse memory across streams.
  virtual void stream_event(StreamId stream, uint64_t event_id, bool is_wait) {
    (void)stream, (void)event_id, (void)is_wait;
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
};

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
