/* The recording API in C, exported by libmemreplay_record.so: for code that cannot link our C++
 * (the PyTorch extension, built against the user's torch and loading this library with dlopen;
 * other languages). Same semantics as live_recorder.h; the library carries its own zstd, zlib and
 * C++ runtime, all hidden, and no protobuf, so it clashes with nothing in the host process.
 *
 *   char error[256];
 *   const char* header[] = {"source", "my-allocator", "setting:block_size", "512"};
 *   memreplay_recorder* r = memreplay_open("run.mrt", header, 2, NULL, error, sizeof error);
 *   if (!r) fprintf(stderr, "%s\n", error);
 *   memreplay_record(r, MEMREPLAY_ALLOC, 0, stream, address, size, 0, 0, 0);
 *   memreplay_close(r, NULL);
 *
 * Header keys: "source", "command_line", "starts_mid_run" ("1"), "captures_flagged" ("1": every
 * alloc made under a CUDA graph capture carries MEMREPLAY_FLAG_CAPTURED), "setting:KEY" (allocator
 * settings), "device" ("INDEX;TOTAL_BYTES;NAME", once per device), "device_cap" ("INDEX;BYTES":
 * the per-process cap the run has on that device, e.g. PyTorch's set_per_process_memory_fraction
 * times its total memory; a replay uses it when given no capacity). pid and time are filled in.
 * Kinds are proto/event.h's EventKind numbers, flags its EventFlag bits, and the format version
 * proto/framing.h's: the copies below are held against those when the library is built
 * (recording_c_api.cpp), and a program that loads the library at run time can compare them with
 * what it reports (memreplay_format_version, memreplay_event_kind).
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

#define MEMREPLAY_FORMAT_MAJOR 1
#define MEMREPLAY_FORMAT_MINOR 3

/* size is the requested bytes unless said otherwise. */
enum {
  MEMREPLAY_ALLOC = 1,
  MEMREPLAY_FREE_REQUESTED = 2,
  MEMREPLAY_FREE_COMPLETED = 3, /* reusable by the allocator from now on */
  MEMREPLAY_SEGMENT_ALLOC = 4, /* size: segment bytes */
  MEMREPLAY_SEGMENT_FREE = 5,
  MEMREPLAY_SEGMENT_MAP = 6, /* size: mapped bytes */
  MEMREPLAY_SEGMENT_UNMAP = 7,
  MEMREPLAY_SNAPSHOT = 8, /* size: active bytes */
  MEMREPLAY_OOM = 9, /* aux: the device's free bytes */
  MEMREPLAY_EMPTY_CACHE = 10,
  MEMREPLAY_ANNOTATION = 11, /* through memreplay_annotate only */
  MEMREPLAY_STREAM_CREATE = 12,
  MEMREPLAY_STREAM_DESTROY = 13,
  MEMREPLAY_EVENT_RECORD = 14, /* aux: the CUDA event */
  MEMREPLAY_STREAM_WAIT_EVENT = 15,
  MEMREPLAY_SYNCHRONIZE = 16, /* stream 0 and aux 0: the device */
  MEMREPLAY_ADDRESS_RESERVE = 17,
  MEMREPLAY_ADDRESS_FREE = 18,
  MEMREPLAY_PHYSICAL_ALLOC = 19, /* aux: the allocation handle */
  MEMREPLAY_PHYSICAL_FREE = 20,
  MEMREPLAY_KIND_COUNT = 21, /* one past the largest kind */
};

enum {
  MEMREPLAY_FLAG_PREEXISTING = 1, /* state of an allocator that ran before the trace started */
  MEMREPLAY_FLAG_FAILED = 2, /* the recorded call failed */
  MEMREPLAY_FLAG_INFERRED = 4, /* inferred rather than recorded */
  MEMREPLAY_FLAG_CAPTURED = 8, /* an alloc made while its stream was capturing a CUDA graph */
};

typedef struct memreplay_recorder memreplay_recorder;

typedef struct {
  uint32_t events_per_chunk; /* 0: default (16384); at most 2097152 */
  uint32_t flush_interval_ms; /* 0: default (500) */
  uint32_t thread_buffer_events; /* 0: default (16384) */
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
typedef void (*memreplay_emit_stack_fn)(void* emit_context, size_t index, const memreplay_frame* frames, size_t count);
/* Called on the writer thread with the context tokens of a batch of events (never 0); calls emit
 * for those it has stacks for, then owns (frees) the tokens. */
typedef void (*memreplay_resolve_fn)(void* user, const uint64_t* tokens, size_t count, memreplay_emit_stack_fn emit,
                                     void* emit_context);
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
/* memreplay_record() of an event in memory pool `pool` (0: the default pool; a private pool, e.g.
 * a CUDA graph's or a torch.cuda.MemPool's, gets a small id of the caller's, at most 65535). */
MEMREPLAY_RECORD_API int memreplay_record_in_pool(memreplay_recorder* r, uint32_t kind, uint32_t device,
                                                  uint64_t stream, uint64_t address, uint64_t size, uint32_t flags,
                                                  uint64_t aux, uint64_t context, uint32_t pool);
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

/* The version of the trace format this library writes: the major, and the minor in *minor (when
 * not NULL). */
MEMREPLAY_RECORD_API uint32_t memreplay_format_version(uint32_t* minor);
/* The number of an event kind by its name in proto/event.h ("alloc", "segment_map", ...), 0 for a
 * name this library does not know. */
MEMREPLAY_RECORD_API uint32_t memreplay_event_kind(const char* name);
/* The bit of an event flag by its name ("preexisting", "failed", "inferred",
 * "captured"), 0 for a name this
 * library does not know. */
MEMREPLAY_RECORD_API uint32_t memreplay_event_flag(const char* name);

#ifdef __cplusplus
}
#endif

#endif /* MEMREPLAY_RECORD_H */
