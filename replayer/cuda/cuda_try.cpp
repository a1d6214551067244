#include "replayer/cuda/cuda_try.h"

#include <cudaTypedefs.h>

#include <string>

#include "replayer/cuda/cuda_driver_api.h"

namespace memreplay::cuda_detail {
namespace {

// "CUDA_ERROR_OUT_OF_MEMORY" for a CUresult; a number when no driver can name it.
std::string driver_error_name(CUresult error) {
  static const PFN_cuGetErrorName_v6000 get_name = [] {
    void* address = nullptr;
    cudaDriverEntryPointQueryResult status{};
    if (cudaGetDriverEntryPointByVersion("cuGetErrorName", &address, kDriverAbiVersion, cudaEnableDefault, &status) !=
            cudaSuccess ||
        status != cudaDriverEntryPointSuccess) {
      (void)cudaGetLastError();
      return PFN_cuGetErrorName_v6000{nullptr};
    }
    return reinterpret_cast<PFN_cuGetErrorName_v6000>(address);
  }();
  const char* name = nullptr;
  if (get_name != nullptr && get_name(error, &name) == CUDA_SUCCESS && name != nullptr) return name;
  return "CUresult " + std::to_string(static_cast<int>(error));
}

}  // namespace

void throw_error(cudaError_t error, const char* call, const char* file, int line) {
  throw CudaError(std::string(cudaGetErrorName(error)) + " (" + cudaGetErrorString(error) + ") from " + call + " at " +
                  file + ":" + std::to_string(line));
}

void throw_error(CUresult error, const char* call, const char* file, int line) {
  throw CudaError(driver_error_name(error) + " from " + call + " at " + file + ":" + std::to_string(line));
}

}  // namespace memreplay::cuda_detail
