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
// Capacity: the Device base's (policies/device.h), as on SimDevice: a malloc/map/pool growth whose
// bytes would take reserved memory over it fails without calling the driver; the pool also gets
// the room left as its maxSize. Out of memory from the driver is the same result (nullopt/false,
// error state cleared). Every other CUDA error throws CudaError (cuda_try.h). The base counts
// every call and times the hooks, the driver calls, into counters().device_call_ns. The destructor gives back whatever
// is still held, so a replay leaves the GPU's free memory as it found it. Not thread-safe: one replay drives one device
// (the current CUDA device is set once).
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
    // Wait for the device's work before unmapping pages: needed when kernels may still read them
    // (a live job; cuMemUnmap does not wait as cudaFree does), not in a replay that runs none.
    bool synchronize_before_unmap = false;
  };
  // Creates the device's primary context. Throws CudaError when the device cannot be used.
  explicit CudaDevice(Options options);
  ~CudaDevice() override;
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  // Why `--device cuda:INDEX` cannot run here (no driver, no such device, no virtual memory
  // management), as one line for the user; nullopt when it can.
  static std::optional<std::string> unavailable_reason(int index);

  uint64_t granularity() const override { return granularity_; }
  std::vector<std::pair<uint64_t, uint64_t>> backed_ranges() const override;

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
  std::optional<uint64_t> do_malloc(uint64_t bytes) override;
  std::optional<uint64_t> do_free(uint64_t address) override;
  std::optional<uint64_t> do_reserve_address(uint64_t bytes) override;
  void do_release_address(uint64_t address, uint64_t bytes) override;
  bool do_map(uint64_t address, uint64_t bytes) override;
  void do_unmap(uint64_t address, uint64_t bytes) override;
  uint64_t do_free_memory() const override;
  bool do_configure_pool(const PoolConfig& config) override;
  std::optional<uint64_t> do_pool_malloc_async(uint64_t bytes, StreamId stream, uint64_t growth_room) override;
  std::optional<uint64_t> do_pool_free_async(uint64_t address) override;
  void do_pool_trim(uint64_t keep_bytes) override;
  void do_synchronize() override;
  void do_stream_event(StreamId stream, uint64_t event_id, bool is_wait) override;
  uint64_t do_pool_reserved_bytes() const override;  // ReservedMemCurrent
  void unmap_page(uint64_t address, CUmemGenericAllocationHandle handle);
  void release_everything() noexcept;

  Options options_;
  const DriverApi& driver_;
  std::string name_;
  uint64_t granularity_ = 0;
  CUmemAllocationProp page_prop_{};  // what cuMemCreate allocates: pinned pages on this device

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
