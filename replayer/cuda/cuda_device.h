// CudaDevice: the Device contract on a real GPU, for truth and timing (SimDevice is the model).
//   malloc/free            -> cudaMalloc / cudaFree
//   reserve/release_address-> cuMemAddressReserve / cuMemAddressFree
//   map(address, bytes)    -> per granularity page: cuMemCreate + cuMemMap; then one
//                             cuMemSetAccess over the range. The page handles are kept so that
//                             unmap can cuMemUnmap + cuMemRelease any whole pages later.
//   pool_*                 -> one dedicated cudaMemPool_t: cudaMallocFromPoolAsync, cudaFreeAsync,
//                             cudaMemPoolTrimTo; ReservedMemCurrent read after every growth point
//   streams                -> one real stream per trace stream (stream_for); trace stream 0 is the
//                             legacy default stream, the others non-blocking streams, as PyTorch's.
// Capacity: a per-process cap enforced as SimDevice does: a malloc/map whose bytes would take
// reserved memory over it fails without calling the driver; the pool gets the room left as its
// maxSize. Out of memory from the driver is the same result (nullopt/false, error state cleared).
// Every other CUDA error throws CudaError (cuda_try.h). Time inside driver calls accumulates in
// counters().device_call_ns. The destructor gives back whatever is still held, so a replay
// leaves the GPU's free memory as it found it.
// Not thread-safe: one replay drives one device (the current CUDA device is set once).
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "policies/device.h"

namespace memreplay {

struct DriverApi;

class CudaDevice final : public Device {
 public:
  struct Options {
    int index = 0;  // CUDA device ordinal
    std::optional<uint64_t> capacity;  // per-process cap in bytes
  };
  // Creates the device's primary context. Throws CudaError when the device cannot be used.
  explicit CudaDevice(Options options);
  ~CudaDevice() override;
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  // Why `--device cuda:INDEX` cannot run here (no driver, no such device, no virtual memory
  // management), as one line for the user; nullopt when it can.
  static std::optional<std::string> unavailable_reason(int index);

  std::optional<uint64_t> malloc(uint64_t bytes) override;
  bool free(uint64_t address) override;
  std::optional<uint64_t> reserve_address(uint64_t bytes) override;
  void release_address(uint64_t address, uint64_t bytes) override;
  bool map(uint64_t address, uint64_t bytes) override;
  void unmap(uint64_t address, uint64_t bytes) override;

  uint64_t granularity() const override { return granularity_; }
  uint64_t total_memory() const override { return total_memory_; }
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

  // The real stream that stands for trace stream `stream` (created on first use).
  cudaStream_t stream_for(StreamId stream);

  // The pool's own counters, read from the driver (cudaMemPoolGetAttribute); zero without a pool.
  struct PoolAttributes {
    uint64_t reserved_current = 0;
    uint64_t reserved_high = 0;
    uint64_t used_current = 0;
    uint64_t used_high = 0;
  };
  PoolAttributes pool_attributes() const;

  const std::string& name() const { return name_; }
  int index() const { return options_.index; }

 private:
  uint64_t limit() const;  // capacity, or the whole device
  bool has_room_for(uint64_t bytes) const { return counters_.reserved_bytes + bytes <= limit(); }
  void refresh_pool_reserved();  // reads ReservedMemCurrent into the counters
  void unmap_page(uint64_t address, CUmemGenericAllocationHandle handle);
  void release_everything() noexcept;

  Options options_;
  const DriverApi& driver_;
  std::string name_;
  uint64_t total_memory_ = 0;
  uint64_t granularity_ = 0;
  CUmemAllocationProp page_prop_{};  // what cuMemCreate allocates: pinned pages on this device
  // Time spent in const driver calls (free_memory) too, hence mutable.
  mutable DeviceCounters counters_;

  std::unordered_map<uint64_t, uint64_t> malloced_;  // cudaMalloc'd address -> bytes
  std::unordered_map<uint64_t, uint64_t> reservations_;  // reserved address -> bytes
  std::map<uint64_t, CUmemGenericAllocationHandle> pages_;  // mapped page -> its handle
  cudaMemPool_t pool_ = nullptr;
  struct PoolAllocation {
    uint64_t bytes;
    StreamId stream;  // allocated on, and freed on
  };
  std::unordered_map<uint64_t, PoolAllocation> pool_live_;  // pool address -> allocation
  std::unordered_map<StreamId, cudaStream_t> streams_;
  std::unordered_map<uint64_t, cudaEvent_t> events_;  // trace event -> real event
};

}  // namespace memreplay
