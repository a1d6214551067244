// dlsym, interposed: CUDA runtimes (libcudart.so and the static one inside cuBLAS, ...) find the
// driver with dlopen("libcuda.so.1") + dlsym(handle, "cuGetProcAddress_v2"), a lookup that
// LD_PRELOAD alone never sees. For a lookup in a specific library we call libc's dlsym and hand
// back our wrapper when we wrap the symbol found.
//
// RTLD_NEXT and RTLD_DEFAULT lookups depend on who calls: libc's dlsym finds its caller from its
// return address. For those the trampoline below jumps to libc's dlsym instead of calling it, so
// the return address it sees is still the original caller's:
//
//   dlsym:  save args → memreplay_dlsym_hook(handle, name) → {value, forward}
//           forward != 0 ? restore args, jmp *forward  :  return value
#include <dlfcn.h>

#include "recorder/interposer/hooks.h"
#include "recorder/interposer/proc_address.h"

namespace mi = memreplay::interposer;

namespace {

struct HookResult {
  void* value;  // the answer, when forward is null
  void* forward;  // else: continue in this function with the original arguments
};

}  // namespace

extern "C" __attribute__((visibility("hidden"), used)) HookResult memreplay_dlsym_hook(void* handle, const char* name) {
  if (handle == RTLD_NEXT || handle == RTLD_DEFAULT) return {nullptr, mi::real_dlsym_address()};
  void* value = mi::real_dlsym(handle, name);
  if (value != nullptr && name != nullptr) value = mi::wrap_exported(name, value);
  return {value, nullptr};
}

#if defined(__x86_64__)
// HookResult comes back in rax (value) and rdx (forward), per the System V ABI.
asm(R"(
    .text
    .globl dlsym
    .type dlsym, @function
dlsym:
    .cfi_startproc
    push %rdi
    .cfi_adjust_cfa_offset 8
    push %rsi
    .cfi_adjust_cfa_offset 8
    sub $8, %rsp
    .cfi_adjust_cfa_offset 8
    call memreplay_dlsym_hook
    add $8, %rsp
    .cfi_adjust_cfa_offset -8
    pop %rsi
    .cfi_adjust_cfa_offset -8
    pop %rdi
    .cfi_adjust_cfa_offset -8
    test %rdx, %rdx
    jz 1f
    jmp *%rdx
1:
    ret
    .cfi_endproc
    .size dlsym, .-dlsym
)");
#else
// Without the trampoline, RTLD_NEXT lookups would resolve relative to this library: leave dlsym
// alone there (runtimes that find the driver through dlsym are then not interposed).
#endif
