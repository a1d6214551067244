// The table of wrapped functions and how each wrapper finds the function it wraps.
#include <dlfcn.h>
#include <link.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "recorder/interposer/cuda_declarations.h"
#include "recorder/interposer/hooks.h"

namespace memreplay::interposer {

thread_local int CallScope::depth_ = 0;

namespace {

const std::array<ApiInfo, kApiCount> kApis = {{
#define MEMREPLAY_API_INFO(name, lib) {#name, Library::lib, reinterpret_cast<void*>(&::name)},
    MEMREPLAY_INTERPOSED(MEMREPLAY_API_INFO)
#undef MEMREPLAY_API_INFO
}};

std::array<std::atomic<void*>, kApiCount> g_real{};

using DlsymFn = void* (*)(void*, const char*);

DlsymFn find_real_dlsym() {
  // dlvsym is not interposed, so it reaches libc: ask it for libc's dlsym (glibc >= 2.34 first).
  for (const char* version : {"GLIBC_2.34", "GLIBC_2.2.5"})
    if (void* f = dlvsym(RTLD_NEXT, "dlsym", version)) return reinterpret_cast<DlsymFn>(f);
  return nullptr;
}

bool is_ours(const void* fn) { return api_by_wrapper(fn).has_value(); }

// For a runtime loaded RTLD_LOCAL (PyTorch's wheels dlopen theirs), RTLD_NEXT does not see it:
// look in the dependencies of the library that called us, which is where the caller's own
// reference would have been bound without us.
void* from_caller_scope(const char* symbol, const void* caller) {
  if (caller == nullptr) return nullptr;
  Dl_info info{};
  link_map* map = nullptr;
  if (dladdr1(caller, &info, reinterpret_cast<void**>(&map), RTLD_DL_LINKMAP) == 0 || map == nullptr) return nullptr;
  void* handle = dlopen(map->l_name[0] ? map->l_name : nullptr, RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) return nullptr;
  void* fn = real_dlsym(handle, symbol);
  dlclose(handle);  // NOLOAD took a reference; the library stays loaded by its own
  return is_ours(fn) ? nullptr : fn;
}

}  // namespace

const ApiInfo& api_info(Api api) { return kApis[static_cast<size_t>(api)]; }

std::optional<Api> api_by_symbol(std::string_view symbol) {
  if (symbol.size() < 3 || symbol[0] != 'c' || symbol[1] != 'u') return std::nullopt;  // fast path for dlsym
  for (size_t i = 0; i < kApiCount; ++i)
    if (symbol == kApis[i].symbol) return static_cast<Api>(i);
  return std::nullopt;
}

std::optional<Api> api_by_wrapper(const void* fn) {
  if (fn == nullptr) return std::nullopt;
  for (size_t i = 0; i < kApiCount; ++i)
    if (kApis[i].wrapper == fn) return static_cast<Api>(i);
  return std::nullopt;
}

void* real_dlsym_address() {
  static const DlsymFn real = find_real_dlsym();
  return reinterpret_cast<void*>(real);
}

void* real_dlsym(void* handle, const char* symbol) {
  const auto real = reinterpret_cast<DlsymFn>(real_dlsym_address());
  return real ? real(handle, symbol) : nullptr;
}

void* libcuda_handle() {
  static void* const handle = [] {
    void* h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    return h ? h : dlopen("libcuda.so.1", RTLD_LAZY);
  }();
  return handle;
}

void remember_real_function(Api api, void* real) {
  if (real == nullptr || is_ours(real)) return;
  void* expected = nullptr;
  g_real[static_cast<size_t>(api)].compare_exchange_strong(expected, real, std::memory_order_acq_rel);
}

void* real_function(Api api, const void* caller) {
  std::atomic<void*>& slot = g_real[static_cast<size_t>(api)];
  if (void* fn = slot.load(std::memory_order_acquire)) return fn;
  const ApiInfo& info = api_info(api);
  void* fn = nullptr;
  if (info.library == Library::driver) {
    if (void* h = libcuda_handle()) fn = real_dlsym(h, info.symbol);
  } else {
    fn = real_dlsym(RTLD_NEXT, info.symbol);
    if (fn == nullptr || is_ours(fn)) fn = from_caller_scope(info.symbol, caller);
  }
  if (fn == nullptr || is_ours(fn)) {
    static std::once_flag warned;
    std::call_once(warned, [&] {
      std::fprintf(stderr, "memreplay: interposer: cannot find the real %s; the call fails\n", info.symbol);
    });
    return nullptr;
  }
  remember_real_function(api, fn);
  return slot.load(std::memory_order_acquire);
}

}  // namespace memreplay::interposer
