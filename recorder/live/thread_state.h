// What a recording thread keeps for the live recorders, in one thread-local object: the rings it
// records into (a small cache, one entry per recorder it has used) and its identity. record()
// computes one thread-local address (in a dlopen'ed library each costs a TLS lookup) and reads
// one cache line. Trivially destructible and constant-initialized, so it is usable until the very
// end of a thread and needs no initialization check on access (constinit).
#pragma once

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace memreplay::detail {

class ThreadRing;

struct RingCacheEntry {
  uint64_t recorder = 0;  // the recorder's id; 0: empty
  ThreadRing* ring = nullptr;
};
inline constexpr size_t kRingCacheSize = 4;

struct alignas(64) ThreadState {
  RingCacheEntry rings[kRingCacheSize];
  uint32_t next_cache_entry = 0;
  uint32_t tid = 0;  // Linux thread id
  uint64_t key = 0;  // unique per thread of this process, never reused
  const void* writer_of = nullptr;  // set on a writer thread: its recorder
};
inline constinit thread_local ThreadState t_thread;

inline constinit std::atomic<uint64_t> g_next_thread_key{1};

inline uint64_t this_thread_key() noexcept {
  if (t_thread.key == 0) t_thread.key = g_next_thread_key.fetch_add(1, std::memory_order_relaxed);
  return t_thread.key;
}

inline uint32_t this_tid() noexcept {
  if (t_thread.tid == 0) t_thread.tid = static_cast<uint32_t>(::syscall(SYS_gettid));
  return t_thread.tid;
}

}  // namespace memreplay::detail
