/* An example memreplay policy plugin in plain C (the ABI: policies/plugin/memreplay_policy_plugin.h).
 *
 * The policy, exact-size caching: requests round up to 4 KiB; each block is its own cudaMalloc; a
 * freed block waits for the next request of its size; when the device has no room, or at
 * empty_cache, the cache goes back to the device. Option: round:BYTES (a power of two, default
 * 4096), e.g. --policy example_exact_size:round:65536.
 *
 * Build: cc -shared -fPIC -O2 -I<memreplay>/policies/plugin exact_size_plugin.c -o exact_size.so
 * Use:   memreplay replay run.mrt --plugin ./exact_size.so --policy example_exact_size */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memreplay_policy_plugin.h"

/* An open-addressing map uint64 -> uint64 (key ~0 = empty), linear probing, grown at 1/2 load. */
typedef struct {
  uint64_t* keys;
  uint64_t* values;
  size_t mask;
  unsigned shift; /* 64 - log2(slots): Fibonacci hashing keeps the top bits */
  size_t count;
} u64_map;

#define EMPTY_KEY (~(uint64_t)0)

static size_t slot_of(const u64_map* map, uint64_t key) {
  return (size_t)((key * 0x9E3779B97F4A7C15ull) >> map->shift);
}

static int map_init(u64_map* map, size_t slots) {
  map->keys = malloc(slots * sizeof(uint64_t));
  map->values = malloc(slots * sizeof(uint64_t));
  if (!map->keys || !map->values) return -1;
  memset(map->keys, 0xff, slots * sizeof(uint64_t));
  map->mask = slots - 1;
  map->shift = 64;
  for (size_t n = slots; n > 1; n /= 2) --map->shift;
  map->count = 0;
  return 0;
}

static void map_free(u64_map* map) {
  free(map->keys);
  free(map->values);
}

static uint64_t* map_find(const u64_map* map, uint64_t key) {
  for (size_t i = slot_of(map, key);; i = (i + 1) & map->mask) {
    if (map->keys[i] == key) return &map->values[i];
    if (map->keys[i] == EMPTY_KEY) return NULL;
  }
}

static int map_put(u64_map* map, uint64_t key, uint64_t value);

static int map_grow(u64_map* map) {
  u64_map bigger;
  if (map_init(&bigger, (map->mask + 1) * 2) != 0) return -1;
  for (size_t i = 0; i <= map->mask; ++i)
    if (map->keys[i] != EMPTY_KEY) map_put(&bigger, map->keys[i], map->values[i]);
  map_free(map);
  *map = bigger;
  return 0;
}

static int map_put(u64_map* map, uint64_t key, uint64_t value) {
  if ((map->count + 1) * 2 > map->mask + 1 && map_grow(map) != 0) return -1;
  size_t i = slot_of(map, key);
  while (map->keys[i] != EMPTY_KEY && map->keys[i] != key) i = (i + 1) & map->mask;
  if (map->keys[i] == EMPTY_KEY) ++map->count;
  map->keys[i] = key;
  map->values[i] = value;
  return 0;
}

static void map_erase(u64_map* map, uint64_t key) { /* backward-shift deletion */
  size_t i = slot_of(map, key);
  while (map->keys[i] != key) {
    if (map->keys[i] == EMPTY_KEY) return;
    i = (i + 1) & map->mask;
  }
  for (size_t j = (i + 1) & map->mask; map->keys[j] != EMPTY_KEY; j = (j + 1) & map->mask) {
    const size_t home = slot_of(map, map->keys[j]);
    const int stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
    if (!stays) {
      map->keys[i] = map->keys[j];
      map->values[i] = map->values[j];
      i = j;
    }
  }
  map->keys[i] = EMPTY_KEY;
  --map->count;
}

/* Cached blocks of one size form a stack threaded through `next_cached` (address -> next). */
typedef struct {
  memreplay_device_api device;
  uint64_t round;
  u64_map live; /* address -> size */
  u64_map cache_head; /* size -> address of the newest cached block */
  u64_map next_cached; /* cached address -> the next one of its size (EMPTY_KEY: none) */
  u64_map cached_size; /* cached address -> size */
  char error[160];
} exact_size_policy;

static void* create(const char* options, const memreplay_device_api* device, char* error, size_t error_size) {
  uint64_t round = 4096;
  if (options[0] != '\0') {
    char* end = NULL;
    if (strncmp(options, "round:", 6) != 0 || (round = strtoull(options + 6, &end, 10)) == 0 || *end != '\0' ||
        (round & (round - 1)) != 0) {
      snprintf(error, error_size, "example_exact_size option: expected round:BYTES (a power of two), got '%s'",
               options);
      return NULL;
    }
  }
  exact_size_policy* policy = calloc(1, sizeof *policy);
  if (!policy || map_init(&policy->live, 1024) || map_init(&policy->cache_head, 256) ||
      map_init(&policy->next_cached, 1024) || map_init(&policy->cached_size, 1024)) {
    snprintf(error, error_size, "example_exact_size: out of host memory");
    free(policy);
    return NULL;
  }
  policy->device = *device;
  policy->round = round;
  return policy;
}

static void release_cache(exact_size_policy* policy) {
  for (size_t i = 0; i <= policy->cached_size.mask; ++i)
    if (policy->cached_size.keys[i] != EMPTY_KEY)
      policy->device.free(policy->device.context, policy->cached_size.keys[i]);
  map_free(&policy->cache_head);
  map_free(&policy->next_cached);
  map_free(&policy->cached_size);
  map_init(&policy->cache_head, 256);
  map_init(&policy->next_cached, 1024);
  map_init(&policy->cached_size, 1024);
}

static void destroy(void* state) {
  exact_size_policy* policy = state;
  map_free(&policy->live);
  map_free(&policy->cache_head);
  map_free(&policy->next_cached);
  map_free(&policy->cached_size);
  free(policy);
}

static int allocate(void* state, uint64_t bytes, uint64_t stream, uint64_t* address, uint64_t* size) {
  exact_size_policy* policy = state;
  (void)stream;
  const uint64_t rounded = (bytes + policy->round - 1) & ~(policy->round - 1);
  uint64_t* head = map_find(&policy->cache_head, rounded);
  if (head && *head != EMPTY_KEY) {
    *address = *head;
    const uint64_t next = *map_find(&policy->next_cached, *address);
    map_erase(&policy->next_cached, *address);
    map_erase(&policy->cached_size, *address);
    *head = next;
  } else if (policy->device.malloc(policy->device.context, rounded, address) != 0) {
    release_cache(policy);
    if (policy->device.malloc(policy->device.context, rounded, address) != 0) return MEMREPLAY_PLUGIN_OUT_OF_MEMORY;
  }
  if (map_put(&policy->live, *address, rounded) != 0) {
    snprintf(policy->error, sizeof policy->error, "out of host memory");
    return MEMREPLAY_PLUGIN_ERROR;
  }
  *size = rounded;
  return MEMREPLAY_PLUGIN_OK;
}

static int free_block(void* state, uint64_t address, uint64_t stream) {
  exact_size_policy* policy = state;
  (void)stream;
  const uint64_t* size = map_find(&policy->live, address);
  if (!size) {
    snprintf(policy->error, sizeof policy->error, "free of 0x%llx, which it did not hand out",
             (unsigned long long)address);
    return MEMREPLAY_PLUGIN_ERROR;
  }
  const uint64_t rounded = *size;
  map_erase(&policy->live, address);
  uint64_t* head = map_find(&policy->cache_head, rounded);
  const uint64_t next = head ? *head : EMPTY_KEY;
  if (map_put(&policy->next_cached, address, next) || map_put(&policy->cached_size, address, rounded) ||
      map_put(&policy->cache_head, rounded, address)) {
    snprintf(policy->error, sizeof policy->error, "out of host memory");
    return MEMREPLAY_PLUGIN_ERROR;
  }
  return MEMREPLAY_PLUGIN_OK;
}

static void empty_cache(void* state) { release_cache(state); }

static const char* last_error(void* state) { return ((exact_size_policy*)state)->error; }

static const memreplay_policy_plugin kPlugin = {
    .abi_version = MEMREPLAY_POLICY_PLUGIN_ABI,
    .name = "example_exact_size",
    .description = "example plugin (C): exact-size caching of 4 KiB-rounded blocks",
    .options_help = "round:BYTES (a power of two, default 4096)",
    .create = create,
    .destroy = destroy,
    .allocate = allocate,
    .free = free_block,
    .empty_cache = empty_cache,
    .last_error = last_error,
};

__attribute__((visibility("default"))) const memreplay_policy_plugin* memreplay_policy_plugin_table(void) {
  return &kPlugin;
}
