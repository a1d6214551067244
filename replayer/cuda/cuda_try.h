// The CUDA boundary's one error style (STYLE.md 8): every runtime or driver call goes through
// CUDA_TRY / CU_TRY, which throw CudaError with the error's name, the call and file:line. The
// _ALLOC forms are for calls that allocate: out of memory is a result there (false, with the
// runtime's error state cleared so that later calls don't report it again), not an exception.
// Only cuda_*.cpp files include this (they are built only when the CUDA toolkit is found).
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <stdexcept>

namespace memreplay {

class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace cuda_detail {

[[noreturn]] void throw_runtime_error(cudaError_t error, const char* call, const char* file, int line);
[[noreturn]] void throw_driver_error(CUresult error, const char* call, const char* file, int line);

inline void check_runtime(cudaError_t error, const char* call, const char* file, int line) {
  if (error != cudaSuccess) [[unlikely]]
    throw_runtime_error(error, call, file, line);
}

inline bool check_runtime_alloc(cudaError_t error, const char* call, const char* file, int line) {
  if (error == cudaSuccess) [[likely]]
    return true;
  if (error != cudaErrorMemoryAllocation) throw_runtime_error(error, call, file, line);
  (void)cudaGetLastError();  // clear it: an OOM the policy handles is no error of ours
  return false;
}

inline void check_driver(CUresult error, const char* call, const char* file, int line) {
  if (error != CUDA_SUCCESS) [[unlikely]]
    throw_driver_error(error, call, file, line);
}

inline bool check_driver_alloc(CUresult error, const char* call, const char* file, int line) {
  if (error == CUDA_SUCCESS) [[likely]]
    return true;
  if (error != CUDA_ERROR_OUT_OF_MEMORY) throw_driver_error(error, call, file, line);
  return false;
}

}  // namespace cuda_detail
}  // namespace memreplay

// Runtime API call (cudaError_t): throws CudaError unless cudaSuccess.
#define CUDA_TRY(call) ::memreplay::cuda_detail::check_runtime((call), #call, __FILE__, __LINE__)
// Runtime API allocation: true on success, false on cudaErrorMemoryAllocation, else throws.
#define CUDA_TRY_ALLOC(call) ::memreplay::cuda_detail::check_runtime_alloc((call), #call, __FILE__, __LINE__)
// Driver API call (CUresult): throws CudaError unless CUDA_SUCCESS.
#define CU_TRY(call) ::memreplay::cuda_detail::check_driver((call), #call, __FILE__, __LINE__)
// Driver API allocation: true on success, false on CUDA_ERROR_OUT_OF_MEMORY, else throws.
#define CU_TRY_ALLOC(call) ::memreplay::cuda_detail::check_driver_alloc((call), #call, __FILE__, __LINE__)
