// One recording thread's buffer in a LiveRecorder: a fixed-size single-producer single-consumer
// ring. The owning thread reserves and publishes slots; the writer thread drains them. Producer and
// consumer share only the two indices, each on its own cache line, so neither waits for the other.
//
//   slots:  [ . . . drained | published, not yet drained | free . . . ]
//                           tail                          head
//   head - tail <= capacity; the producer's cached copy of tail is refreshed only when it looks full.
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <memory>
#include <new>
#include <vector>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "proto/event.h"

namespace memreplay::detail {

struct LiveRecord {
  uint64_t seq;  // process-wide order of the recorder
  uint64_t context;  // token for the ContextResolver, or the KeyValues* of an annotation
  uint32_t thread;  // Linux thread id of the recording thread
  bool time_in_ticks;  // event.time_ns holds read_ticks() (tick_clock.h), for the writer to convert
  Event event;
};

// Whether the CPU has PREFETCHW (a cache line in, owned, ready for writing). Asked, not assumed:
// on an x86-64 CPU without it the opcode is not promised to be a no-op.
inline bool cpu_prefetches_for_write() noexcept {
#if defined(__x86_64__)
  static const bool has = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __get_cpuid(0x80000001, &a, &b, &c, &d) && (c & bit_PRFCHW) != 0;
  }();
  return has;
#else
  return false;
#endif
}

class ThreadRing {
 public:
  ThreadRing(uint32_t capacity, uint64_t owner_key, uint32_t owner_tid)
      : owner(owner_key),
        tid_(owner_tid),
        prefetch_(cpu_prefetches_for_write()),
        capacity_(std::bit_ceil(std::max<uint32_t>(capacity, 2))),
        mask_(capacity_ - 1),
        // Raw storage, not constructed: a slot is always written before it is read, and pages
        // the thread never fills are never touched.
        slots_(static_cast<LiveRecord*>(::operator new[](capacity_ * sizeof(LiveRecord)))) {}

  // Registration and thread exit.
  const uint64_t owner;  // thread key of the producer
  std::atomic<bool> retired{false};  // the producer thread has exited

  // --- producer (the owning thread) ---
  // The next free slot, or nullptr when the ring is full.
  LiveRecord* reserve() noexcept {
    const uint64_t head = head_.load(std::memory_order_relaxed);
    if (head - tail_cache_ >= capacity_) {
      tail_cache_ = tail_.load(std::memory_order_acquire);
      if (head - tail_cache_ >= capacity_) return nullptr;
    }
    return &slots_.get()[head & mask_];
  }
  // Makes the reserved slot visible to the writer. True once each time the ring passes half full
  // (as far as the producer can tell), so the caller can wake the writer early.
  bool publish() noexcept {
    const uint64_t head = head_.load(std::memory_order_relaxed) + 1;
    head_.store(head, std::memory_order_release);
    if (prefetch_) prefetch_for_write(&slots_.get()[(head + kPrefetchAhead) & mask_]);
    if (head - tail_cache_ < capacity_ / 2 || half_signalled_.load(std::memory_order_relaxed)) return false;
    half_signalled_.store(true, std::memory_order_relaxed);
    tail_cache_ = tail_.load(std::memory_order_acquire);
    return true;
  }
  void count_drop() noexcept {
    dropped_.store(dropped_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  uint32_t tid() const noexcept { return tid_; }  // Linux thread id of the producer

  // --- consumer (the writer thread) ---
  void drain(std::vector<LiveRecord>& out) {
    const uint64_t tail = tail_.load(std::memory_order_relaxed);
    const uint64_t head = head_.load(std::memory_order_acquire);
    for (uint64_t i = tail; i != head; ++i) out.push_back(slots_.get()[i & mask_]);
    tail_.store(head, std::memory_order_release);
    if (head != tail) half_signalled_.store(false, std::memory_order_relaxed);
  }
  bool empty() const noexcept { return head_.load(std::memory_order_acquire) == tail_.load(std::memory_order_relaxed); }
  uint64_t recorded() const noexcept { return head_.load(std::memory_order_relaxed); }
  uint64_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }

 private:
  // Each publish() fetches, for writing, the slot kPrefetchAhead records on. The writer thread read
  // it last (or it left the cache), so a store to it waits for its lines, and the caller's next
  // locked instruction (the allocator's unlock, the next sequence number) waits for that store.
  // Fetched ahead, the lines arrive in the background.
  static constexpr uint64_t kPrefetchAhead = 4;
  static void prefetch_for_write(const LiveRecord* slot) noexcept {
#if defined(__x86_64__)
    // A slot spans two cache lines at most: its first and last byte name them.
    asm volatile("prefetchw %0" : : "m"(*reinterpret_cast<const char*>(slot)));
    asm volatile("prefetchw %0" : : "m"(reinterpret_cast<const char*>(slot + 1)[-1]));
#else
    (void)slot;
#endif
  }

  struct Free {
    void operator()(LiveRecord* p) const { ::operator delete[](p); }
  };

  // The producer's cache line: all of the ring that record() touches but the slot itself.
  alignas(64) std::atomic<uint64_t> head_{0};  // also the count of records published
  uint64_t tail_cache_ = 0;
  std::atomic<uint64_t> dropped_{0};
  const uint32_t tid_;
  const bool prefetch_;
  const uint64_t capacity_;
  const uint64_t mask_;
  std::unique_ptr<LiveRecord, Free> slots_;

  // The writer's.
  alignas(64) std::atomic<uint64_t> tail_{0};
  // Set by the producer when it woke the writer, cleared by each drain: only a hint.
  std::atomic<bool> half_signalled_{false};
};

}  // namespace memreplay::detail
