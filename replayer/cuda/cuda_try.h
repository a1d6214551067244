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

// What differs between the two APIs; the checks below are written once over both.
[[noreturn]] void throw_error(cudaError_t error, const char* call, const char* file, int line);
[[noreturn]] void throw_error(CUresult error, const char* call, const char* file, int line);
inline bool succeeded(cudaError_t error) { return error == cudaSuccess; }
inline bool succeeded(CUresult error) { return error == CUDA_SUCCESS; }
inline bool out_of_memory(cudaError_t error) { return error == cudaErrorMemoryAllocation; }
inline bool out_of_memory(CUresult error) { return error == CUDA_ERROR_OUT_OF_MEMORY; }
// The runtime keeps its last error: an OOM the policy handles is no error of ours, so clear it.
inline void clear_error(cudaError_t) { (void)cudaGetLastError(); }
inline void clear_error(CUresult) {}

template <class Error>
void check(Error error, const char* call, const char* file, int line) {
  if (!succeeded(error)) [[unlikely]]
    throw_error(error, call, file, line);
}

template <class Error>
bool check_alloc(Error error, const char* call, const char* file, int line) {
  if (succeeded(error)) [[likely]]
    return true;
  if (!out_of_memory(error)) throw_error(error, call, file, line);
  clear_error(error);
  return false;
}

}  // namespace cuda_detail
}  // namespace memreplay

// Runtime API call (cudaError_t): throws CudaError unless cudaSuccess.
#define CUDA_TRY(call) ::memreplay::cuda_detail::check(cudaError_t{call}, #call, __FILE__, __LINE__)
// Runtime API allocation: true on success, false on cudaErrorMemoryAllocation, else throws.
#define CUDA_TRY_ALLOC(call) ::memreplay::cuda_detail::check_alloc(cudaError_t{call}, #call, __FILE__, __LINE__)
// Driver API call (CUresult): throws CudaError unless CUDA_SUCCESS.
#define CU_TRY(call) ::memreplay::cuda_detail::check(CUresult{call}, #call, __FILE__, __LINE__)
// Driver API allocation: true on success, false on CUDA_ERROR_OUT_OF_MEMORY, else throws.
#define CU_TRY_ALLOC(call) ::memreplay::cuda_detail::check_alloc(CUresult{call}, #call, __FILE__, __LINE__)
