// The Device a policy allocates from: the only way a policy touches (simulated or real) GPU memory.
// Implementations live in replayer/ (SimDevice, CudaDevice). A Device counts every driver-level
// call and the bytes it holds, so every policy is measured the same way and none can misreport.
#pragma once

#include <cstdint>
#include <optional>

namespace memreplay {

using StreamId = uint64_t;  // raw stream handle from the trace; 0 = legacy default stream

// Driver-level call counters, kept by the device, never by a policy.
struct DeviceCounters {
  uint64_t malloc_calls = 0;    // successful cudaMalloc
  uint64_t free_calls = 0;      // cudaFree
  uint64_t reserve_calls = 0;   // cuMemAddressReserve
  uint64_t release_calls = 0;   // cuMemAddressFree
  uint64_t map_calls = 0;       // successful map() calls (each may map several pages)
  uint64_t unmap_calls = 0;     // unmap() calls
  uint64_t failed_calls = 0;    // malloc()/map() that failed for lack of memory
  uint64_t reserved_bytes = 0;  // physical bytes held now: cudaMalloc'd + mapped
  uint64_t reserved_peak = 0;
};

class Device {
 public:
  virtual ~Device() = default;

  // cudaMalloc: nullopt when the device (or its capacity) has no room.
  virtual std::optional<uint64_t> malloc(uint64_t bytes) = 0;
  // cudaFree of an address malloc() returned.
  virtual void free(uint64_t address) = 0;

  // Virtual memory management (cuMemAddressReserve / cuMemAddressFree): address space only.
  virtual std::optional<uint64_t> reserve_address(uint64_t bytes) = 0;
  virtual void release_address(uint64_t address, uint64_t bytes) = 0;
  // Back [address, address+bytes) with physical pages (cuMemCreate + cuMemMap + cuMemSetAccess
  // per page); counted as one call. False, with nothing mapped, when there is no room.
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

  virtual const DeviceCounters& counters() const = 0;
};

}  // namespace memreplay
