// Handing out our wrappers where a program looks driver functions up at run time: through
// cuGetProcAddress / cudaGetDriverEntryPoint (by name, CUDA version and stream mode) and through
// dlsym on a library handle (by exported name).
#pragma once

#include <cstdint>

namespace memreplay::interposer {

// `real` is what the lookup returned for `symbol` ("cuMemAlloc", as cuGetProcAddress takes it)
// asked for CUDA `version` (-1: unknown) with CU_GET_PROC_ADDRESS_* `flags`. Returns our wrapper
// when we wrap exactly that function, else `real`. A pointer equal to the driver's export of
// that name decides; otherwise the version and stream mode do, but only for versions no newer
// than the CUDA headers we were built with (a newer one may have a signature we do not know).
void* wrap_driver_entry(const char* symbol, int version, uint64_t flags, void* real);

// `real` is what dlsym returned for the exported name `symbol` ("cuMemAlloc_v2", "cudaMalloc").
void* wrap_exported(const char* symbol, void* real);

}  // namespace memreplay::interposer
