// The CUDA driver API functions CudaDevice needs (cuMem* virtual memory management), looked up at
// run time through the statically linked runtime (cudaGetDriverEntryPointByVersion) instead of
// linking libcuda.so.1: the memreplay binaries must start on machines with no NVIDIA driver (CI),
// where the simulator still works and only `--device cuda` reports that no GPU is visible.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>

namespace memreplay {

struct DriverApi {
  PFN_cuDeviceGet_v2000 cuDeviceGet = nullptr;
  PFN_cuDeviceGetAttribute_v2000 cuDeviceGetAttribute = nullptr;
  PFN_cuMemGetAllocationGranularity_v10020 cuMemGetAllocationGranularity = nullptr;
  PFN_cuMemAddressReserve_v10020 cuMemAddressReserve = nullptr;
  PFN_cuMemAddressFree_v10020 cuMemAddressFree = nullptr;
  PFN_cuMemCreate_v10020 cuMemCreate = nullptr;
  PFN_cuMemRelease_v10020 cuMemRelease = nullptr;
  PFN_cuMemMap_v10020 cuMemMap = nullptr;
  PFN_cuMemUnmap_v10020 cuMemUnmap = nullptr;
  PFN_cuMemSetAccess_v10020 cuMemSetAccess = nullptr;

  // Looks the functions up once (the runtime must be able to start: a driver is present).
  // Throws CudaError naming the first function the driver does not provide.
  static const DriverApi& get();
};

// The ABI version asked for: these functions have kept their signatures since CUDA 10.2/12.0,
// and any driver that runs a CUDA 13 runtime is at least this new.
inline constexpr unsigned int kDriverAbiVersion = 12000;

}  // namespace memreplay
