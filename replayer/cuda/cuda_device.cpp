#include "replayer/cuda/cuda_device.h"

#include <algorithm>
#include <stdexcept>

#include "proto/input_error.h"
#include "replayer/cuda/cuda_driver_api.h"
#include "replayer/cuda/cuda_try.h"
#include "replayer/device_registry.h"

namespace memreplay {
namespace {

uint64_t round_up(uint64_t n, uint64_t unit) { return (n + unit - 1) / unit * unit; }

// The handle `handles` keeps for `key`, made by `create` on first use; a creation that throws
// leaves no entry behind.
template <class Map, class Create>
typename Map::mapped_type created_once(Map& handles, const typename Map::key_type& key, Create create) {
  auto [it, inserted] = handles.try_emplace(key, nullptr);
  if (inserted) {
    try {
      create(&it->second);
    } catch (...) {
      handles.erase(it);
      throw;
    }
  }
  return it->second;
}

void* as_pointer(uint64_t address) { return reinterpret_cast<void*>(static_cast<uintptr_t>(address)); }
uint64_t as_address(const void* pointer) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(pointer)); }

}  // namespace

std::optional<std::string> CudaDevice::unavailable_reason(int index) {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    (void)cudaGetLastError();
    return std::string("no CUDA device is visible (cudaGetDeviceCount: ") + cudaGetErrorName(error) + ")";
  }
  if (count == 0) return "no CUDA device is visible (cudaGetDeviceCount: 0 devices)";
  if (index >= count)
    return "there is no CUDA device " + std::to_string(index) + " (" + std::to_string(count) + " visible)";
  try {
    const DriverApi& driver = DriverApi::get();
    CUdevice device{};
    CU_TRY(driver.cuDeviceGet(&device, index));
    int vmm = 0;
    CU_TRY(driver.cuDeviceGetAttribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, device));
    if (vmm == 0)
      return "CUDA device " + std::to_string(index) +
             " does not support virtual memory management (cuMemCreate/cuMemMap)";
  } catch (const CudaError& e) {
    return std::string("the CUDA driver cannot be used: ") + e.what();
  }
  return std::nullopt;
}

CudaDevice::CudaDevice(Options options) : Device(0, options.capacity), options_(options), driver_(DriverApi::get()) {
  time_driver_calls();
  CUDA_TRY(cudaSetDevice(options_.index));
  CUDA_TRY(cudaFree(nullptr));  // create the context now, not inside the first timed call
  cudaDeviceProp properties{};
  CUDA_TRY(cudaGetDeviceProperties(&properties, options_.index));
  name_ = properties.name;
  set_memory(properties.totalGlobalMem, options_.capacity);
  page_prop_.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  page_prop_.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  page_prop_.location.id = options_.index;
  size_t granularity = 0;
  // The minimum (2 MiB on current GPUs): what cuMemCreate sizes must be multiples of, and what
  // SimDevice models, so that both devices take the same pages.
  CU_TRY(driver_.cuMemGetAllocationGranularity(&granularity, &page_prop_, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  granularity_ = granularity;
}

CudaDevice::~CudaDevice() { release_everything(); }

std::optional<uint64_t> CudaDevice::do_malloc(uint64_t bytes) {
  void* pointer = nullptr;
  // A live job may be capturing a CUDA graph on this thread: in the default (global) capture mode
  // cudaMalloc would invalidate the capture, so it runs in relaxed mode, as PyTorch's allocator's
  // does (a captured graph never replays a cudaMalloc; the memory stays its pool's).
  struct RelaxedCapture {
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    RelaxedCapture() { CUDA_TRY(cudaThreadExchangeStreamCaptureMode(&mode)); }
    ~RelaxedCapture() { (void)cudaThreadExchangeStreamCaptureMode(&mode); }
  } relaxed;
  if (!CUDA_TRY_ALLOC(cudaMalloc(&pointer, bytes))) return std::nullopt;
  const uint64_t address = as_address(pointer);
  malloced_.emplace(address, bytes);
  return address;
}

std::optional<uint64_t> CudaDevice::do_free(uint64_t address) {
  const auto it = malloced_.find(address);
  if (it == malloced_.end()) return std::nullopt;
  CUDA_TRY(cudaFree(as_pointer(address)));
  const uint64_t bytes = it->second;
  malloced_.erase(it);
  return bytes;
}

std::optional<uint64_t> CudaDevice::do_reserve_address(uint64_t bytes) {
  const uint64_t size = round_up(bytes, granularity_);
  CUdeviceptr address = 0;
  if (!CU_TRY_ALLOC(driver_.cuMemAddressReserve(&address, size, 0, 0, 0))) return std::nullopt;  // out of VA
  reservations_.emplace(address, size);
  return address;
}

void CudaDevice::do_release_address(uint64_t address, uint64_t) {
  const auto it = reservations_.find(address);
  if (it == reservations_.end()) throw std::logic_error("CudaDevice::release_address of an address it never reserved");
  CU_TRY(driver_.cuMemAddressFree(address, it->second));
  reservations_.erase(it);
}

bool CudaDevice::do_map(uint64_t address, uint64_t bytes) {
  // One physical allocation per page, so that unmap can give back any whole pages later.
  for (uint64_t page = address; page < address + bytes; page += granularity_) {
    CUmemGenericAllocationHandle handle{};
    bool ok = CU_TRY_ALLOC(driver_.cuMemCreate(&handle, granularity_, &page_prop_, 0));
    if (ok) {
      ok = CU_TRY_ALLOC(driver_.cuMemMap(page, granularity_, 0, handle, 0));
      if (!ok) CU_TRY(driver_.cuMemRelease(handle));
    }
    if (!ok) {  // out of memory: undo this call's pages, nothing stays mapped
      for (uint64_t done = address; done < page; done += granularity_) {
        unmap_page(done, pages_.at(done));
        pages_.erase(done);
      }
      return false;
    }
    pages_.emplace(page, handle);
  }
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = options_.index;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CU_TRY(driver_.cuMemSetAccess(address, bytes, &access, 1));
  return true;
}

void CudaDevice::do_unmap(uint64_t address, uint64_t bytes) {
  if (options_.synchronize_before_unmap) CUDA_TRY(cudaDeviceSynchronize());
  for (uint64_t page = address; page < address + bytes; page += granularity_) {
    const auto it = pages_.find(page);
    if (it == pages_.end()) throw std::logic_error("CudaDevice::unmap of a page that is not mapped");
    unmap_page(page, it->second);
    pages_.erase(it);
  }
}

void CudaDevice::unmap_page(uint64_t address, CUmemGenericAllocationHandle handle) {
  CU_TRY(driver_.cuMemUnmap(address, granularity_));
  CU_TRY(driver_.cuMemRelease(handle));
}

uint64_t CudaDevice::do_free_memory() const {
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  CUDA_TRY(cudaMemGetInfo(&free_bytes, &total_bytes));
  return free_bytes;
}

std::vector<std::pair<uint64_t, uint64_t>> CudaDevice::backed_ranges() const {
  // cudaMalloc'd ranges and mapped pages (adjacent pages merged). The pool's physical layout is
  // the driver's secret, so its memory is not listed.
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const auto& [page, handle] : pages_) {  // in address order
    if (!ranges.empty() && ranges.back().second == page)
      ranges.back().second = page + granularity_;
    else
      ranges.emplace_back(page, page + granularity_);
  }
  for (const auto& [address, bytes] : malloced_) ranges.emplace_back(address, address + bytes);
  std::sort(ranges.begin(), ranges.end());
  return ranges;
}

bool CudaDevice::do_configure_pool(const PoolConfig& config) {
  int supported = 0;
  CUDA_TRY(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, options_.index));
  if (supported == 0) return false;
  if (pool_ == nullptr) {
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = options_.index;
    // Under a cap the pool may hold at most the room left, in whole pages (0 would mean "no limit").
    if (options_.capacity) {
      const uint64_t reserved = counters().reserved_bytes;
      const uint64_t room = limit() > reserved ? limit() - reserved : 0;
      props.maxSize = std::max(granularity_, room / granularity_ * granularity_);
    }
    CUDA_TRY(cudaMemPoolCreate(&pool_, &props));
  }
  cuuint64_t threshold = config.release_threshold;
  int follow = config.reuse_follow_event_dependencies ? 1 : 0;
  int opportunistic = config.reuse_allow_opportunistic ? 1 : 0;
  int internal = config.reuse_allow_internal_dependencies ? 1 : 0;
  CUDA_TRY(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &threshold));
  CUDA_TRY(cudaMemPoolSetAttribute(pool_, cudaMemPoolReuseFollowEventDependencies, &follow));
  CUDA_TRY(cudaMemPoolSetAttribute(pool_, cudaMemPoolReuseAllowOpportunistic, &opportunistic));
  CUDA_TRY(cudaMemPoolSetAttribute(pool_, cudaMemPoolReuseAllowInternalDependencies, &internal));
  return true;
}

std::optional<uint64_t> CudaDevice::do_pool_malloc_async(uint64_t bytes, StreamId stream, uint64_t growth_room) {
  if (pool_ == nullptr) throw std::logic_error("CudaDevice::pool_malloc_async before configure_pool");
  const cudaStream_t real_stream = stream_for(stream);
  const uint64_t reserved_before = do_pool_reserved_bytes();
  void* pointer = nullptr;
  if (!CUDA_TRY_ALLOC(cudaMallocFromPoolAsync(&pointer, bytes, pool_, real_stream))) return std::nullopt;
  // The driver grows the pool in steps of its own, which can exceed the room the capacity leaves
  // (memory outside the pool counts too): such an allocation is given back, as out of memory.
  if (const uint64_t after = do_pool_reserved_bytes();
      after > reserved_before && after - reserved_before > growth_room) {
    CUDA_TRY(cudaFreeAsync(pointer, real_stream));
    do_synchronize();
    CUDA_TRY(cudaMemPoolTrimTo(pool_, reserved_before));
    return std::nullopt;
  }
  const uint64_t address = as_address(pointer);
  pool_live_.emplace(address, PoolAllocation{bytes, stream});
  return address;
}

std::optional<uint64_t> CudaDevice::do_pool_free_async(uint64_t address) {
  const auto it = pool_live_.find(address);
  if (it == pool_live_.end()) return std::nullopt;
  const cudaStream_t real_stream = stream_for(it->second.stream);
  CUDA_TRY(cudaFreeAsync(as_pointer(address), real_stream));
  const uint64_t bytes = it->second.bytes;
  pool_live_.erase(it);
  return bytes;
}

void CudaDevice::do_pool_trim(uint64_t keep_bytes) {
  if (pool_ == nullptr) return;
  do_synchronize();
  CUDA_TRY(cudaMemPoolTrimTo(pool_, keep_bytes));
}

void CudaDevice::do_synchronize() { CUDA_TRY(cudaDeviceSynchronize()); }

uint64_t CudaDevice::do_pool_reserved_bytes() const {
  if (pool_ == nullptr) return 0;
  cuuint64_t reserved = 0;
  CUDA_TRY(cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrReservedMemCurrent, &reserved));
  return reserved;
}

void CudaDevice::do_stream_event(StreamId stream, uint64_t event_id, bool is_wait) {
  const cudaStream_t real_stream = stream_for(stream);
  if (is_wait) {
    const auto it = events_.find(event_id);
    if (it != events_.end()) CUDA_TRY(cudaStreamWaitEvent(real_stream, it->second, 0));
    return;  // an event never recorded in the trace orders nothing
  }
  const cudaEvent_t event = created_once(
      events_, event_id, [](cudaEvent_t* e) { CUDA_TRY(cudaEventCreateWithFlags(e, cudaEventDisableTiming)); });
  CUDA_TRY(cudaEventRecord(event, real_stream));
}

cudaStream_t CudaDevice::stream_for(StreamId stream) {
  if (stream == 0) return cudaStreamLegacy;
  // Non-blocking, as PyTorch's side streams: no implicit ordering with the legacy stream.
  return created_once(streams_, stream,
                      [](cudaStream_t* s) { CUDA_TRY(cudaStreamCreateWithFlags(s, cudaStreamNonBlocking)); });
}

CudaDevice::PoolAttributes CudaDevice::pool_attributes() const {
  PoolAttributes attributes;
  if (pool_ == nullptr) return attributes;
  const auto read = [this](cudaMemPoolAttr attribute) {
    cuuint64_t value = 0;
    CUDA_TRY(cudaMemPoolGetAttribute(pool_, attribute, &value));
    return static_cast<uint64_t>(value);
  };
  attributes.reserved_current = read(cudaMemPoolAttrReservedMemCurrent);
  attributes.reserved_high = read(cudaMemPoolAttrReservedMemHigh);
  attributes.used_current = read(cudaMemPoolAttrUsedMemCurrent);
  attributes.used_high = read(cudaMemPoolAttrUsedMemHigh);
  return attributes;
}

void CudaDevice::release_everything() noexcept {
  // Best effort, errors ignored: a destructor must not throw, and a failed call here cannot be
  // handled any better than by going on with the rest.
  (void)cudaSetDevice(options_.index);
  (void)cudaDeviceSynchronize();
  for (const auto& [address, allocation] : pool_live_) (void)cudaFreeAsync(as_pointer(address), cudaStreamLegacy);
  if (pool_ != nullptr) {
    (void)cudaDeviceSynchronize();
    (void)cudaMemPoolDestroy(pool_);  // gives its reserved memory back
  }
  for (const auto& [page, handle] : pages_) {
    (void)driver_.cuMemUnmap(page, granularity_);
    (void)driver_.cuMemRelease(handle);
  }
  for (const auto& [address, bytes] : reservations_) (void)driver_.cuMemAddressFree(address, bytes);
  for (const auto& [address, bytes] : malloced_) (void)cudaFree(as_pointer(address));
  for (const auto& [id, event] : events_) (void)cudaEventDestroy(event);
  for (const auto& [id, stream] : streams_) (void)cudaStreamDestroy(stream);
  (void)cudaDeviceSynchronize();
  (void)cudaGetLastError();
}

MEMREPLAY_REGISTER_DEVICE(cuda, "cuda",
                          "a real NVIDIA GPU through CUDA: cudaMalloc, cuMem* pages, cudaMallocAsync pools",
                          [](const DeviceRequest& request) -> std::unique_ptr<Device> {
                            const std::string spec = "--device cuda:" + std::to_string(request.index) + ": ";
                            if (const auto reason = CudaDevice::unavailable_reason(request.index))
                              throw InputError(spec + *reason);
                            try {
                              return std::make_unique<CudaDevice>(CudaDevice::Options{request.index, request.capacity});
                            } catch (const CudaError& e) {
                              throw InputError(spec + "the GPU cannot be used: " + e.what());
                            }
                          });

}  // namespace memreplay
