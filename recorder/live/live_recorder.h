// LiveRecorder: the concurrent recording core under every live recorder (the C++ API, the PyTorch
// trace tracker, the CUDA interposer). Any number of threads record events; one background
// thread writes them to the trace file.
//
//   thread A ─ record() ─► [ring A] ─┐
//   thread B ─ record() ─► [ring B] ─┼─► writer thread: merge by sequence number ─► LiveTraceWriter
//   thread C ─ record() ─► [ring C] ─┘    (every drain_interval; a chunk every flush_interval)
//
// The file is written by LiveTraceWriter (live_trace_writer.h): the .mrt format without protobuf,
// so this core can go into other processes as a self-contained shared library.
//
// Hot path. record() touches only the calling thread's ring (single producer, single consumer)
// and one shared counter, the sequence number: no lock, no allocation once the thread has its
// ring, no system call. The sequence number is taken with one atomic increment, so events that
// happen one after another (through a lock, a join, ...) are numbered in that order and the trace
// keeps cause before effect across threads. Time stamps follow the sequence (clamped to never go
// backwards). An event without a time gets the CPU's time-stamp counter where reading that is
// cheaper than clock_gettime, turned into now_ns() time by the writer (tick_clock.h). What
// record() reads sits on few cache lines, as it usually runs with cold caches (once per
// allocation, between a program's other work).
//
// Bounded memory. Each thread's ring holds thread_buffer_events; when it is full the event is
// dropped and counted, never waited for (the trace then says so in a "memreplay.dropped_events"
// annotation, and close() on stderr). At most max_threads rings exist at once; a ring is freed
// when its thread has exited and the writer has emptied it.
//
// Crash safety. The writer hands a chunk to the OS every flush_interval (and on flush()), so a
// process killed even by SIGKILL leaves a file whose whole chunks read back; only the events of
// the last flush_interval are lost. At exit() and on fatal signals (SIGSEGV, SIGABRT, SIGTERM, ...)
// every open recorder writes what it has (exit_flush.h). In a child made by fork() recording
// stops: the file belongs to the parent.
//
// Errors. The constructor throws InputError when the file cannot be created. A write error later
// (full disk, ...) stops the recording: a message on stderr, record() returns false from then on,
// the file keeps every chunk written before. Nothing here ever throws into a recording thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "proto/event.h"
#include "proto/frame_text.h"
#include "recorder/live/live_trace_writer.h"

namespace memreplay {

struct LiveRecorderOptions {
  uint32_t events_per_chunk = 16384;
  // Every flush_interval the events so far go to the file as a chunk: what a SIGKILL can lose.
  std::chrono::milliseconds flush_interval{500};
  // How often the writer empties the thread rings (sooner when one is half full).
  std::chrono::milliseconds drain_interval{5};
  // Events each recording thread can have in flight before it drops; rounded up to a power of two.
  uint32_t thread_buffer_events = 1u << 14;
  uint32_t max_threads = 1024;
  // Live recorders favour speed: level 3 writes ~2x the bytes of level 9 at a fraction of the cost.
  int zstd_level = 3;
  // Give frees without a size (segment_free, free_*, physical_free) the size of the matching
  // allocation: the CUDA interposer sees no size at cudaFree.
  bool fill_free_sizes = false;
  // Flush at exit() and on fatal signals (exit_flush.h).
  bool flush_at_exit = true;
};

struct LiveRecorderStats {
  uint64_t recorded = 0;  // events accepted into the rings
  uint64_t written = 0;  // events handed to the writer (in the file after the next flush)
  uint64_t dropped = 0;  // events lost: ring full, too many threads, or after a write error
  uint64_t threads = 0;  // rings created
  bool failed = false;  // writing stopped on an error (LiveRecorder::error() says which)
};

// What a context token on an event stands for (a Python traceback, a return address, ...),
// turned into stack frames on the writer thread, where taking locks and allocating is fine.
class ContextResolver {
 public:
  struct Context {
    uint64_t token;  // as given to record(); never 0
    uint32_t thread;  // Linux thread id of the recording thread
  };
  virtual ~ContextResolver() = default;
  // frames[i] = the frames of contexts[i], innermost first (empty: no stack). Each token is passed
  // once unless stable_tokens(); it is the resolver's to release.
  virtual void resolve(std::span<const Context> contexts, std::vector<std::vector<FrameText>>& frames) = 0;
  // Equal (token, thread) pairs always give equal frames, so the recorder may reuse the stack id.
  virtual bool stable_tokens() const { return false; }
  // Tokens of events that were dropped or are written without resolving (after a fatal signal):
  // release them if that is safe.
  virtual void discard(std::span<const uint64_t> tokens) noexcept { (void)tokens; }
};

class LiveRecorder {
 public:
  // Creates `path`, writes the header and starts the writer thread. Throws InputError when the
  // file cannot be created.
  LiveRecorder(const std::string& path, const LiveTraceHeader& header, LiveRecorderOptions options = {});
  // close(); the caller makes sure no thread still records.
  ~LiveRecorder();
  LiveRecorder(const LiveRecorder&) = delete;
  LiveRecorder& operator=(const LiveRecorder&) = delete;

  // Any thread, any time, never blocks or throws. time_ns 0 is stamped now. An annotation event
  // goes through annotate() instead. context: a token for the resolver (0 = none); the event's
  // own stack field is used when context is 0. False when the event was not kept.
  bool record(const Event& event, uint64_t context = 0) noexcept;
  // An annotation event with key=value metadata (allocates; not for hot paths).
  bool annotate(uint32_t device, KeyValues metadata) noexcept;

  // Every event recorded before the call (by any thread) is in the file when this returns true.
  bool flush();
  // Writes the rest and the footer, stops the writer thread. Idempotent; record() is a no-op after.
  void close() noexcept;

  // Set before the first event with a context token.
  void set_context_resolver(ContextResolver* resolver);

  LiveRecorderStats stats() const;
  std::string error() const;  // empty unless stats().failed
  const std::string& path() const;

  // The clock of the time stamps: ns since the Unix epoch, never going backwards.
  static uint64_t now_ns() noexcept;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace memreplay
