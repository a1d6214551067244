/* The live allocator in C, exported by libmemreplay_alloc.so: any memreplay policy serving a
 * running job's GPU allocations, in the shape of PyTorch's CUDAPluggableAllocator
 * (torch.cuda.memory.CUDAPluggableAllocator(path, "memreplay_alloc_malloc", "memreplay_alloc_free")).
 * memreplay.torch.use_policy() sets it up with the hooks only C++ can set (record_stream,
 * empty_cache, the memory fraction, OOM as torch.OutOfMemoryError): python/memreplay/torch/.
 *
 *   char error[256];
 *   if (memreplay_alloc_configure("bfc", "cuda", "run.mrt", "libmemreplay_record.so", error, sizeof error))
 *     fprintf(stderr, "%s\n", error);
 *   void* p = memreplay_alloc_malloc(1 << 20, 0, stream);   NULL: out of memory, see last_error
 *   memreplay_alloc_free(p, 1 << 20, 0, stream);
 *
 * Without memreplay_alloc_configure, the first call configures from the environment:
 * MEMREPLAY_ALLOC_POLICY (default "memreplay"), MEMREPLAY_ALLOC_DEVICE ("cuda"), MEMREPLAY_ALLOC_TRACE
 * (no trace when unset) and MEMREPLAY_RECORD_LIB. One GPU per process: the device of the first
 * allocation. Every function may be called from any thread. */
#ifndef MEMREPLAY_ALLOC_H
#define MEMREPLAY_ALLOC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MEMREPLAY_ALLOC_API __attribute__((visibility("default")))

/* policy_spec: as `memreplay replay --policy` takes it ("memreplay", "bfc",
 * "pytorch:expandable_segments:True", a plugin "PATH.so[:OPTIONS]"). device_spec: "cuda" (a real
 * GPU) or "sim" (the simulator: addresses no kernel may touch; for tests). trace_path and
 * record_library may be NULL or "" (no trace). 0 on success; else the reason in error (one line).
 * Refused once the first block was handed out. */
MEMREPLAY_ALLOC_API int memreplay_alloc_configure(const char* policy_spec, const char* device_spec,
                                                  const char* trace_path, const char* record_library, char* error,
                                                  size_t error_size);
/* CUDAPluggableAllocator's alloc and free; stream is a cudaStream_t. NULL when out of memory or on
 * an error (the message: memreplay_alloc_last_error), and for size 0 (no memory, not an error: the
 * last error is then empty). */
MEMREPLAY_ALLOC_API void* memreplay_alloc_malloc(ssize_t size, int device, void* stream);
MEMREPLAY_ALLOC_API void memreplay_alloc_free(void* ptr, ssize_t size, int device, void* stream);
/* An allocation in private pool `pool` (1..65535: a CUDA graph's or a MemPool's, numbered by the caller). */
MEMREPLAY_ALLOC_API void* memreplay_alloc_malloc_in_pool(ssize_t size, int device, void* stream, uint32_t pool);
MEMREPLAY_ALLOC_API void memreplay_alloc_release_pool(uint32_t pool);
/* Names private pool `pool` in the run's trace, before its first allocation: PyTorch's MempoolId_t
 * (torch_id_first, torch_id_second) and kind ("graph" or "mempool", as the PyTorch tracker names them). */
MEMREPLAY_ALLOC_API void memreplay_alloc_name_pool(uint32_t pool, uint64_t torch_id_first, uint64_t torch_id_second,
                                                   const char* kind);
/* Tensor.record_stream: the block's free waits for `stream`'s work too. 0 for an unknown ptr. */
MEMREPLAY_ALLOC_API int memreplay_alloc_record_stream(void* ptr, void* stream);
/* torch.cuda.empty_cache(). */
MEMREPLAY_ALLOC_API void memreplay_alloc_empty_cache(void);
/* torch.cuda.set_per_process_memory_fraction: 0 on success; refused (-1) after the first allocation. */
MEMREPLAY_ALLOC_API int memreplay_alloc_set_memory_fraction(double fraction, int device);
/* The calling thread's last error message; returns its length (written up to size - 1 bytes). */
MEMREPLAY_ALLOC_API size_t memreplay_alloc_last_error(char* buffer, size_t size);
/* torch.cuda.memory_stats()-style figures as one JSON object; returns the length it needs. */
MEMREPLAY_ALLOC_API size_t memreplay_alloc_stats(char* buffer, size_t size);
/* Finishes the trace (the footer written); 1 when it is whole, 0 when it failed or none was asked for. */
MEMREPLAY_ALLOC_API int memreplay_alloc_finish_trace(void);

#ifdef __cplusplus
}
#endif

#endif /* MEMREPLAY_ALLOC_H */
