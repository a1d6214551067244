/* Test plugins that break the plugin contract, one way each, chosen at build time by MISBEHAVE
 * (tests/plugin_test.cpp): without it, a correct passthrough policy ("plugin_passthrough").
 *   1 overlap       the second block overlaps the first
 *   2 too_small     blocks one byte smaller than the request
 *   3 double_free   the device free of a block is called twice
 *   4 error         the third allocation reports an error
 *   5 abi           ABI version 999
 *   6 no_symbol     the entry symbol is missing
 *   7 name_taken    registers as "passthrough" */
#include <stdio.h>
#include <stdlib.h>

#include "memreplay_policy_plugin.h"

#ifndef MISBEHAVE
#define MISBEHAVE 0
#define PLUGIN_NAME "plugin_passthrough"
#endif

typedef struct {
  memreplay_device_api device;
  int allocations;
  uint64_t first;
  char error[64];
} state;

static void* create(const char* options, const memreplay_device_api* device, char* error, size_t error_size) {
  if (options[0] != '\0') {
    snprintf(error, error_size, "%s takes no options, got '%s'", PLUGIN_NAME, options);
    return NULL;
  }
  state* s = calloc(1, sizeof *s);
  s->device = *device;
  return s;
}

static void destroy(void* s) { free(s); }

static int allocate(void* p, uint64_t bytes, uint64_t stream, uint64_t* address, uint64_t* size) {
  state* s = p;
  (void)stream;
  ++s->allocations;
  if (MISBEHAVE == 4 && s->allocations == 3) {
    snprintf(s->error, sizeof s->error, "injected fault");
    return MEMREPLAY_PLUGIN_ERROR;
  }
  if (s->device.malloc(s->device.context, bytes, address) != 0) return MEMREPLAY_PLUGIN_OUT_OF_MEMORY;
  if (s->allocations == 1) s->first = *address;
  if (MISBEHAVE == 1 && s->allocations == 2) *address = s->first;
  *size = MISBEHAVE == 2 ? bytes - 1 : bytes;
  return MEMREPLAY_PLUGIN_OK;
}

static int free_block(void* p, uint64_t address, uint64_t stream) {
  state* s = p;
  (void)stream;
  s->device.free(s->device.context, address);
  if (MISBEHAVE == 3) s->device.free(s->device.context, address);
  return MEMREPLAY_PLUGIN_OK;
}

static void empty_cache(void* p) { (void)p; }

static const char* last_error(void* p) { return ((state*)p)->error; }

/* In the header's field order; fault 5 declares an ABI version that does not exist. */
static const memreplay_policy_plugin kPlugin = {MISBEHAVE == 5 ? 999u : MEMREPLAY_POLICY_PLUGIN_ABI,
                                                PLUGIN_NAME,
                                                "test plugin",
                                                "(no options)",
                                                create,
                                                destroy,
                                                allocate,
                                                free_block,
                                                empty_cache,
                                                last_error};

#if MISBEHAVE == 6
__attribute__((visibility("default"))) const memreplay_policy_plugin* some_other_entry(void) { return &kPlugin; }
#else
__attribute__((visibility("default"))) const memreplay_policy_plugin* memreplay_policy_plugin_table(void) {
  return &kPlugin;
}
#endif
