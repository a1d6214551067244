/* The recording API in C, exported by libmemreplay_record.so: for code that cannot link our C++
 * (the PyTorch extension, built against the user's torch and loading this library with dlopen;
 * other languages). Same semantics as live_recorder.h; the library carries its own zstd, zlib
 * and C++ runtime, all hidden, so it clashes with nothing in the host process.
 *
 *   char error[256];
 *   const char* header[] = {"source", "my-allocator", "setting:block_size", "512"};
 *   memreplay_recorder* r = memreplay_open("run.mrt", header, 2, NULL, error, sizeof error);
 *   if (!r) fprintf(stderr, "%s\n", error);
 *   memreplay_record(r, MEMREPLAY_ALLOC, 0, stream, address, size, 0, 0, 0);
 *   memreplay_close(r, NULL);
 *
 * Header keys: "source", "command_line", "starts_mid_run" ("1"), "setting:KEY" (allocator
 * settings), "device" ("INDEX;TOTAL_BYTES;NAME", once per device). pid and time are filled in.
 * Kinds are proto/event.h's EventKind numbers; flags its EventFlag bits.
 *
 * memreplay_record() may be called from any thread at any time and never blocks; it returns 0
 * when the event was not kept (closed, failed, buffer full). A closed recorder stays a valid,
 * inert object until memreplay_destroy(), which must not race with memreplay_record(). */
#ifndef MEMREPLAY_RECORD_H
#define MEMREPLAY_RECORD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MEMREPLAY_RECORD_API __attribute__((visibility("default")))

enum {
  MEMREPLAY_ALLOC = 1,
  MEMREPLAY_FREE_REQUESTED = 2,
  MEMREPLAY_FREE_COMPLETED = 3,
  MEMREPLAY_SEGMENT_ALLOC = 4,
  MEMREPLAY_SEGMENT_FREE = 5,
  MEMREPLAY_SEGMENT_MAP = 6,
  MEMREPLAY_SEGMENT_UNMAP = 7,
  MEMREPLAY_SNAPSHOT = 8,
  MEMREPLAY_OOM = 9,
  MEMREPLAY_EMPTY_CACHE = 10,
  MEMREPLAY_ANNOTATION = 11,
  MEMREPLAY_FLAG_PREEXISTING = 1,
  MEMREPLAY_FLAG_FAILED = 2,
};

typedef struct memreplay_recorder memreplay_recorder;

typedef struct {
  uint32_t events_per_chunk;      /* 0: default (16384) */
  uint32_t flush_interval_ms;     /* 0: default (500) */
  uint32_t thread_buffer_events;  /* 0: default (16384) */
} memreplay_options;

typedef struct {
  uint64_t recorded, written, dropped;
  int failed;
} memreplay_stats;

typedef struct {
  const char* filename;
  uint32_t line;
  const char* name;
} memreplay_frame;

/* A stack for contexts[index], innermost frame first; the strings are copied. */
typedef void (*memreplay_emit_stack_fn)(void* emit_context, size_t index, const memreplay_frame* frames,
                                        size_t count);
/* Called on the writer thread with the context tokens of a batch of events (never 0); calls emit
 * for those it has stacks for, then owns (frees) the tokens. */
typedef void (*memreplay_resolve_fn)(void* user, const uint64_t* tokens, size_t count,
                                     memreplay_emit_stack_fn emit, void* emit_context);
/* Tokens that will not be resolved (dropped events, after a fatal signal): free them if safe. */
typedef void (*memreplay_discard_fn)(void* user, const uint64_t* tokens, size_t count);

/* NULL on failure, with the reason in error (when error_size > 0). header: key, value, key, ...
 * (header_pairs pairs). options may be NULL. */
MEMREPLAY_RECORD_API memreplay_recorder* memreplay_open(const char* path, const char* const* header,
                                                        size_t header_pairs, const memreplay_options* options,
                                                        char* error, size_t error_size);
MEMREPLAY_RECORD_API int memreplay_record(memreplay_recorder* r, uint32_t kind, uint32_t device, uint64_t stream,
                                          uint64_t address, uint64_t size, uint32_t flags, uint64_t aux,
                                          uint64_t context);
/* keys_values: key, value, key, ... (pairs pairs). */
MEMREPLAY_RECORD_API int memreplay_annotate(memreplay_recorder* r, uint32_t device, const char* const* keys_values,
                                            size_t pairs);
MEMREPLAY_RECORD_API void memreplay_set_resolver(memreplay_recorder* r, memreplay_resolve_fn resolve,
                                                 memreplay_discard_fn discard, void* user);
MEMREPLAY_RECORD_API int memreplay_flush(memreplay_recorder* r);
/* Finishes the file; stats may be NULL. 0 if the recording had failed (the reason was printed). */
MEMREPLAY_RECORD_API int memreplay_close(memreplay_recorder* r, memreplay_stats* stats);
MEMREPLAY_RECORD_API void memreplay_get_stats(memreplay_recorder* r, memreplay_stats* stats);
MEMREPLAY_RECORD_API void memreplay_destroy(memreplay_recorder* r);
/* The recorder's clock: ns since the Unix epoch. */
MEMREPLAY_RECORD_API uint64_t memreplay_now_ns(void);

#ifdef __cplusplus
}
#endif

#endif /* MEMREPLAY_RECORD_H */
