#include "recorder/interposer/proc_address.h"

#include <array>
#include <atomic>
#include <cstring>

#include "recorder/interposer/cuda_declarations.h"
#include "recorder/interposer/hooks.h"

namespace memreplay::interposer {
namespace {

enum class StreamMode : uint8_t { any, legacy, per_thread };

// Which exported function cuGetProcAddress returns for a name, by requested CUDA version and
// stream mode (from cudaTypedefs.h's PFN_<name>_v<version>[_ptsz] typedefs).
struct Variant {
  const char* name;
  int min_version;
  int end_version;  // exclusive; 0 = still current
  StreamMode mode;
  Api api;
};

constexpr Variant kVariants[] = {
    {"cuMemAlloc", 3020, 0, StreamMode::any, Api::cuMemAlloc_v2},
    {"cuMemFree", 3020, 0, StreamMode::any, Api::cuMemFree_v2},
    {"cuMemAllocManaged", 6000, 0, StreamMode::any, Api::cuMemAllocManaged},
    {"cuMemAllocAsync", 11020, 0, StreamMode::legacy, Api::cuMemAllocAsync},
    {"cuMemAllocAsync", 11020, 0, StreamMode::per_thread, Api::cuMemAllocAsync_ptsz},
    {"cuMemFreeAsync", 11020, 0, StreamMode::legacy, Api::cuMemFreeAsync},
    {"cuMemFreeAsync", 11020, 0, StreamMode::per_thread, Api::cuMemFreeAsync_ptsz},
    {"cuMemAllocFromPoolAsync", 11020, 0, StreamMode::legacy, Api::cuMemAllocFromPoolAsync},
    {"cuMemAllocFromPoolAsync", 11020, 0, StreamMode::per_thread, Api::cuMemAllocFromPoolAsync_ptsz},
    {"cuMemCreate", 10020, 0, StreamMode::any, Api::cuMemCreate},
    {"cuMemRelease", 10020, 0, StreamMode::any, Api::cuMemRelease},
    {"cuMemMap", 10020, 0, StreamMode::any, Api::cuMemMap},
    {"cuMemUnmap", 10020, 0, StreamMode::any, Api::cuMemUnmap},
    {"cuMemAddressReserve", 10020, 0, StreamMode::any, Api::cuMemAddressReserve},
    {"cuMemAddressFree", 10020, 0, StreamMode::any, Api::cuMemAddressFree},
    {"cuStreamCreate", 2000, 0, StreamMode::any, Api::cuStreamCreate},
    {"cuStreamCreateWithPriority", 5050, 0, StreamMode::any, Api::cuStreamCreateWithPriority},
    {"cuStreamDestroy", 4000, 0, StreamMode::any, Api::cuStreamDestroy_v2},
    {"cuEventRecord", 2000, 0, StreamMode::legacy, Api::cuEventRecord},
    {"cuEventRecord", 7000, 0, StreamMode::per_thread, Api::cuEventRecord_ptsz},
    {"cuEventRecordWithFlags", 11010, 0, StreamMode::legacy, Api::cuEventRecordWithFlags},
    {"cuEventRecordWithFlags", 11010, 0, StreamMode::per_thread, Api::cuEventRecordWithFlags_ptsz},
    {"cuStreamWaitEvent", 3020, 0, StreamMode::legacy, Api::cuStreamWaitEvent},
    {"cuStreamWaitEvent", 7000, 0, StreamMode::per_thread, Api::cuStreamWaitEvent_ptsz},
    {"cuStreamSynchronize", 2000, 0, StreamMode::legacy, Api::cuStreamSynchronize},
    {"cuStreamSynchronize", 7000, 0, StreamMode::per_thread, Api::cuStreamSynchronize_ptsz},
    {"cuEventSynchronize", 2000, 0, StreamMode::any, Api::cuEventSynchronize},
    {"cuCtxSynchronize", 2000, 13000, StreamMode::any, Api::cuCtxSynchronize},
    {"cuCtxSynchronize", 13000, 0, StreamMode::any, Api::cuCtxSynchronize_v2},
    {"cuGetProcAddress", 11030, 12000, StreamMode::any, Api::cuGetProcAddress},
    {"cuGetProcAddress", 12000, 0, StreamMode::any, Api::cuGetProcAddress_v2},
};

// The driver's own export of each wrapped driver function (nullptr until looked up / absent).
void* exported_address(Api api) {
  static std::array<std::atomic<void*>, kApiCount> cache{};
  static std::array<std::atomic<bool>, kApiCount> known{};
  const auto i = static_cast<size_t>(api);
  if (!known[i].load(std::memory_order_acquire)) {
    void* h = libcuda_handle();
    cache[i].store(h ? real_dlsym(h, api_info(api).symbol) : nullptr, std::memory_order_relaxed);
    known[i].store(true, std::memory_order_release);
  }
  return cache[i].load(std::memory_order_relaxed);
}

void* hand_out(Api api, void* real) {
  remember_real_function(api, real);
  return api_info(api).wrapper;
}

}  // namespace

void* wrap_driver_entry(const char* symbol, int version, uint64_t flags, void* real) {
  if (symbol == nullptr || real == nullptr || api_by_wrapper(real)) return real;
  // 1. The very function the driver exports under a name we wrap.
  for (const Variant& v : kVariants)
    if (std::strcmp(v.name, symbol) == 0 && exported_address(v.api) == real) return hand_out(v.api, real);
  // 2. By version and stream mode, for versions whose signatures we know.
  if (version < 0 || version > CUDA_VERSION) return real;
  const StreamMode mode =
      (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) ? StreamMode::per_thread : StreamMode::legacy;
  for (const Variant& v : kVariants) {
    if (std::strcmp(v.name, symbol) != 0 || version < v.min_version) continue;
    if (v.end_version != 0 && version >= v.end_version) continue;
    if (v.mode != StreamMode::any && v.mode != mode) continue;
    return hand_out(v.api, real);
  }
  return real;
}

void* wrap_exported(const char* symbol, void* real) {
  if (symbol == nullptr || real == nullptr || api_by_wrapper(real)) return real;
  const auto api = api_by_symbol(symbol);
  return api ? hand_out(*api, real) : real;
}

}  // namespace memreplay::interposer
