#include "replayer/cuda/cuda_driver_api.h"

#include <cuda_runtime_api.h>

#include "replayer/cuda/cuda_try.h"

namespace memreplay {
namespace {

template <typename Fn>
void load(Fn& fn, const char* symbol) {
  void* address = nullptr;
  cudaDriverEntryPointQueryResult status{};
  CUDA_TRY(cudaGetDriverEntryPointByVersion(symbol, &address, kDriverAbiVersion, cudaEnableDefault, &status));
  if (status != cudaDriverEntryPointSuccess || address == nullptr)
    throw CudaError(std::string("the CUDA driver does not provide ") + symbol);
  fn = reinterpret_cast<Fn>(address);
}

DriverApi load_all() {
  DriverApi api;
  load(api.cuDeviceGet, "cuDeviceGet");
  load(api.cuDeviceGetAttribute, "cuDeviceGetAttribute");
  load(api.cuMemGetAllocationGranularity, "cuMemGetAllocationGranularity");
  load(api.cuMemAddressReserve, "cuMemAddressReserve");
  load(api.cuMemAddressFree, "cuMemAddressFree");
  load(api.cuMemCreate, "cuMemCreate");
  load(api.cuMemRelease, "cuMemRelease");
  load(api.cuMemMap, "cuMemMap");
  load(api.cuMemUnmap, "cuMemUnmap");
  load(api.cuMemSetAccess, "cuMemSetAccess");
  return api;
}

}  // namespace

const DriverApi& DriverApi::get() {
  static const DriverApi api = load_all();
  return api;
}

}  // namespace memreplay
