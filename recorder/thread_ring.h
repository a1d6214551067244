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

#include "proto/event.h"

namespace memreplay::detail {

struct LiveRecord {
  uint64_t seq;      // process-wide order of the recorder
  uint64_t context;  // token for the ContextResolver, or the KeyValues* of an annotation
  uint32_t thread;   // Linux thread id of the recording thread
  Event event;
};

class ThreadRing {
 public:
  ThreadRing(uint32_t capacity, uint64_t owner_key)
      : owner(owner_key),
        capacity_(std::bit_ceil(std::max<uint32_t>(capacity, 2))),
        mask_(capacity_ - 1),
        // Raw storage, not constructed: a slot is always written before it is read, and pages
        // the thread never fills are never touched.
        slots_(static_cast<LiveRecord*>(::operator new[](capacity_ * sizeof(LiveRecord)))) {}

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
    recorded_.store(recorded_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    if (head - tail_cache_ < capacity_ / 2 || half_signalled_.load(std::memory_order_relaxed)) return false;
    half_signalled_.store(true, std::memory_order_relaxed);
    tail_cache_ = tail_.load(std::memory_order_acquire);
    return true;
  }
  void count_drop() noexcept { dropped_.store(dropped_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed); }

  // --- consumer (the writer thread) ---
  void drain(std::vector<LiveRecord>& out) {
    const uint64_t tail = tail_.load(std::memory_order_relaxed);
    const uint64_t head = head_.load(std::memory_order_acquire);
    for (uint64_t i = tail; i != head; ++i) out.push_back(slots_.get()[i & mask_]);
    tail_.store(head, std::memory_order_release);
    if (head != tail) half_signalled_.store(false, std::memory_order_relaxed);
  }
  bool empty() const noexcept {
    return head_.load(std::memory_order_acquire) == tail_.load(std::memory_order_relaxed);
  }
  uint64_t recorded() const noexcept { return recorded_.load(std::memory_order_relaxed); }
  uint64_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }

  const uint64_t owner;            // thread key of the producer
  std::atomic<bool> retired{false};  // the producer thread has exited

 private:
  const uint64_t capacity_;
  const uint64_t mask_;
  struct Free {
    void operator()(LiveRecord* p) const { ::operator delete[](p); }
  };
  std::unique_ptr<LiveRecord, Free> slots_;
  alignas(64) std::atomic<uint64_t> head_{0};
  uint64_t tail_cache_ = 0;
  std::atomic<uint64_t> recorded_{0};
  std::atomic<uint64_t> dropped_{0};
  alignas(64) std::atomic<uint64_t> tail_{0};
  // Set by the producer when it woke the writer, cleared by each drain: only a hint.
  std::atomic<bool> half_signalled_{false};
};

}  // namespace memreplay::detail
