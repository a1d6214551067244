/* Test plugins that break the plugin contract, one way each, chosen at build time by MISBEHAVE
 * (tests/policies/plugin_test.cpp, plugin_containment_test.cpp): without it, a correct passthrough
 * policy ("plugin_passthrough").
 *   1 overlap        the second block overlaps the first
 *   2 too_small      blocks one byte smaller than the request
 *   3 double_free    the device free of a block is called twice
 *   4 error          the third allocation reports an error
 *   5 abi            ABI version 999
 *   6 no_symbol      the entry symbol is missing
 *   7 name_taken     registers as "passthrough"
 *   8 segfault       the third allocation writes through a null pointer
 *   9 abort          the third allocation calls abort()
 *  10 stack          the third allocation recurses until the stack overflows
 *  11 exit           the third allocation calls exit(0)
 *  12 atexit         create registers an exit handler that calls _exit(0)
 *  13 foreign_block  the second block is at an address the device never gave it
 *  14 huge_size      the second block is 2^64 - 1 bytes long
 *  15 bad_name       its name has a newline
 *  16 bad_utf8       its name is not UTF-8
 *  17 unterminated   create refuses its options with an error buffer filled to the end, no NUL
 *  18 map_past_cap   each block is fresh mapped pages in one large reservation, capacity ignored
 *  19 error_newline  the third allocation reports an error whose message has a newline */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memreplay_policy_plugin.h"

#ifndef MISBEHAVE
#define MISBEHAVE 0
#define PLUGIN_NAME "plugin_passthrough"
#endif

typedef struct {
  memreplay_device_api device;
  int allocations;
  uint64_t first;
  uint64_t reservation; /* mode 18: the VA its pages are mapped in, and the next unused page */
  uint64_t next_page;
  char error[64];
} state;

static void exit_quietly(void) { _exit(0); }

static int* volatile null_pointer = NULL;

// A real SIGSEGV, not UndefinedBehaviorSanitizer's report of it: the containment is what is tested.
__attribute__((no_sanitize("undefined"))) static void store_through_null(void) { *null_pointer = 1; }

static void* create(const char* options, const memreplay_device_api* device, char* error, size_t error_size) {
  if (MISBEHAVE == 17) {
    memset(error, 'x', error_size);
    return NULL;
  }
  if (options[0] != '\0') {
    snprintf(error, error_size, "%s takes no options, got '%s'", PLUGIN_NAME, options);
    return NULL;
  }
  state* s = calloc(1, sizeof *s);
  s->device = *device;
  if (MISBEHAVE == 12) atexit(exit_quietly);
  return s;
}

static void destroy(void* s) { free(s); }

static int overflow_the_stack(volatile int depth) {
  volatile char frame[4096];
  frame[0] = (char)depth;
  if (depth < 0) return 0; /* never: a condition the compiler cannot see through */
  return overflow_the_stack(depth + 1) + frame[0];
}

/* Mode 18: whole pages, mapped fresh for every block; no look at the capacity. */
static int map_fresh_pages(state* s, uint64_t bytes, uint64_t* address, uint64_t* size) {
  const uint64_t page = s->device.granularity;
  if (s->reservation == 0) {
    if (s->device.reserve_address(s->device.context, 1ull << 40, &s->reservation) != 0)
      return MEMREPLAY_PLUGIN_OUT_OF_MEMORY;
    s->next_page = s->reservation;
  }
  const uint64_t span = (bytes + page - 1) / page * page;
  if (s->device.map(s->device.context, s->next_page, span) != 0) return MEMREPLAY_PLUGIN_OUT_OF_MEMORY;
  *address = s->next_page;
  *size = span;
  s->next_page += span;
  return MEMREPLAY_PLUGIN_OK;
}

static int allocate(void* p, uint64_t bytes, uint64_t stream, uint64_t* address, uint64_t* size) {
  state* s = p;
  (void)stream;
  ++s->allocations;
  if (s->allocations == 3) {
    if (MISBEHAVE == 4 || MISBEHAVE == 19) {
      snprintf(s->error, sizeof s->error, MISBEHAVE == 4 ? "injected fault" : "two\nlines");
      return MEMREPLAY_PLUGIN_ERROR;
    }
    if (MISBEHAVE == 8) store_through_null();
    if (MISBEHAVE == 9) abort();
    if (MISBEHAVE == 10) return overflow_the_stack(0);
    if (MISBEHAVE == 11) exit(0);
  }
  if (MISBEHAVE == 18) return map_fresh_pages(s, bytes, address, size);
  if (s->device.malloc(s->device.context, bytes, address) != 0) return MEMREPLAY_PLUGIN_OUT_OF_MEMORY;
  if (s->allocations == 1) s->first = *address;
  if (MISBEHAVE == 1 && s->allocations == 2) *address = s->first;
  if (MISBEHAVE == 13 && s->allocations == 2) *address = 0x1000;
  *size = MISBEHAVE == 2 ? bytes - 1 : bytes;
  if (MISBEHAVE == 14 && s->allocations == 2) *size = ~(uint64_t)0;
  return MEMREPLAY_PLUGIN_OK;
}

static int free_block(void* p, uint64_t address, uint64_t stream) {
  state* s = p;
  (void)stream;
  if (MISBEHAVE == 18) return MEMREPLAY_PLUGIN_OK; /* its pages stay mapped */
  s->device.free(s->device.context, address);
  if (MISBEHAVE == 3) s->device.free(s->device.context, address);
  return MEMREPLAY_PLUGIN_OK;
}

static void empty_cache(void* p) { (void)p; }

static const char* last_error(void* p) { return ((state*)p)->error; }

#if MISBEHAVE == 15
#define TABLE_NAME "plugin\nbad_name"
#elif MISBEHAVE == 16
#define TABLE_NAME "plugin_\xff\xfe"
#else
#define TABLE_NAME PLUGIN_NAME
#endif

/* In the header's field order; fault 5 declares an ABI version that does not exist. */
static const memreplay_policy_plugin kPlugin = {MISBEHAVE == 5 ? 999u : MEMREPLAY_POLICY_PLUGIN_ABI,
                                                TABLE_NAME,
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
