/* The C ABI of a memreplay policy plugin: a shared object that exports one function,
 *
 *     const memreplay_policy_plugin* memreplay_policy_plugin_table(void);
 *
 * returning a table that lives as long as the library. `memreplay ... --plugin PATH.so` (or
 * MEMREPLAY_PLUGINS=A.so:B.so) loads it and registers the policy under the table's name; it is then
 * used like any built-in policy (--policy NAME:OPTIONS) and runs through the same checks.
 *
 * Only C types cross this boundary; no exceptions may cross it. Versioning: abi_version must equal
 * MEMREPLAY_POLICY_PLUGIN_ABI of the memreplay that loads it, which refuses any other version with
 * a message naming both. Fields are only ever added at the end, with a new version.
 *
 * The memreplay side checks what the plugin returns: a block smaller than the request, larger than
 * 2^48 bytes, overlapping a live one or outside the device memory the plugin holds (one malloc,
 * or mapped pages), a device free or unmap of memory it does not hold (twice, never allocated, or
 * under a live block), or MEMREPLAY_PLUGIN_ERROR stop the replay with one line naming the policy
 * and the event index (exit status 2), with --lenient too. A crash, abort, stack overflow or
 * exit() inside a plugin call ends memreplay the same way (policies/plugin/plugin_guard.h). The
 * name, description and options_help must each be one line of printable UTF-8 (name: non-empty,
 * no ':'), else the plugin is refused at load; last_error's message is read up to 1024 bytes and
 * create's error buffer up to its size. Example: examples/plugin/exact_size_plugin.c. */
#ifndef MEMREPLAY_POLICY_PLUGIN_H
#define MEMREPLAY_POLICY_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MEMREPLAY_POLICY_PLUGIN_ABI 1u
#define MEMREPLAY_POLICY_PLUGIN_SYMBOL "memreplay_policy_plugin_table"

/* Results of allocate and free. */
#define MEMREPLAY_PLUGIN_OK 0
#define MEMREPLAY_PLUGIN_OUT_OF_MEMORY 1 /* allocate only: an OOM result, not an error */
#define MEMREPLAY_PLUGIN_ERROR 2 /* a fault; last_error() says what */

/* The device a plugin allocates from: the only way it touches (simulated or real) GPU memory.
 * Every call is counted by memreplay, as for built-in policies. */
typedef struct memreplay_device_api {
  void* context; /* pass back to every call */
  /* cudaMalloc: 0 and *address set, or nonzero when the device (or its capacity) has no room. */
  int (*malloc)(void* context, uint64_t bytes, uint64_t* address);
  void (*free)(void* context, uint64_t address);
  /* cuMemAddressReserve / cuMemAddressFree: address space only. */
  int (*reserve_address)(void* context, uint64_t bytes, uint64_t* address);
  void (*release_address)(void* context, uint64_t address, uint64_t bytes);
  /* Back [address, address + bytes) with physical pages (whole pages of `granularity`) inside a
   * reservation of the plugin's, one call; 0 on success, nonzero when the device has no room: the
   * device refuses pages past the capacity as it refuses a malloc. */
  int (*map)(void* context, uint64_t address, uint64_t bytes);
  void (*unmap)(void* context, uint64_t address, uint64_t bytes);
  uint64_t granularity; /* bytes of a physical page (2 MiB on current NVIDIA GPUs) */
  uint64_t total_memory; /* bytes of the whole device */
  uint64_t capacity; /* the per-process cap in bytes, 0 when there is none */
} memreplay_device_api;

typedef struct memreplay_policy_plugin {
  uint32_t abi_version; /* MEMREPLAY_POLICY_PLUGIN_ABI */
  const char* name; /* the policy's name: non-empty, no ':' */
  const char* description; /* one line */
  const char* options_help; /* one line */
  /* A policy instance on `device` (valid until destroy) with the option text after "NAME:"
   * ("" for none); NULL with a one-line message in error[error_size] when the options are bad. */
  void* (*create)(const char* options, const memreplay_device_api* device, char* error, size_t error_size);
  void (*destroy)(void* policy);
  /* `bytes` > 0 requested on `stream`: OK with *address and *size (>= bytes) set,
   * OUT_OF_MEMORY, or ERROR. */
  int (*allocate)(void* policy, uint64_t bytes, uint64_t stream, uint64_t* address, uint64_t* size);
  /* A block allocate handed out, now reusable: OK, or ERROR. */
  int (*free)(void* policy, uint64_t address, uint64_t stream);
  /* torch.cuda.empty_cache(): give cached memory back. May be NULL (nothing is given back). */
  void (*empty_cache)(void* policy);
  /* The message of the last ERROR; may be NULL. */
  const char* (*last_error)(void* policy);
} memreplay_policy_plugin;

typedef const memreplay_policy_plugin* (*memreplay_policy_plugin_entry)(void);

#ifdef __cplusplus
}
#endif

#endif /* MEMREPLAY_POLICY_PLUGIN_H */
