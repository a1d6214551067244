// The recording core behind LiveRecorder (live_recorder.h says what it promises): the hot path,
// flush/close, and the writer thread's loop, which drains the rings, puts their records in
// sequence order (trace_order.h), resolves stacks (stack_resolution.h), fills free sizes
// (free_sizes.h) and writes through LiveTraceWriter. Thread exit and fork() reach it through
// process_hooks.h, exit() and fatal signals through exit_flush.h.
#include "recorder/live/live_recorder.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <utility>

#include "recorder/live/exit_flush.h"
#include "recorder/live/free_sizes.h"
#include "recorder/live/process_hooks.h"
#include "recorder/live/stack_resolution.h"
#include "recorder/live/thread_ring.h"
#include "recorder/live/thread_state.h"
#include "recorder/live/tick_clock.h"
#include "recorder/live/trace_order.h"

namespace memreplay {
namespace {

using detail::LiveRecord;
using detail::t_thread;
using detail::ThreadRing;
using Clock = std::chrono::steady_clock;

// How long a fatal-signal handler waits for the writer before letting the process die.
constexpr int kSignalFlushWaitMs = 2000;

std::atomic<uint64_t> g_next_recorder_id{1};

void print_error(const std::string& message) { std::fprintf(stderr, "memreplay: %s\n", message.c_str()); }

}  // namespace

struct alignas(64) LiveRecorder::Impl final : detail::ExitFlushClient {
  Impl(const std::string& path, const LiveTraceHeader& header, LiveRecorderOptions options);
  ~Impl() override;

  bool record(const Event& event, uint64_t context) noexcept;
  bool flush();
  void close() noexcept;

  // ExitFlushClient
  void flush_at_exit() noexcept override { close(); }
  void flush_on_signal() noexcept override;
  // From process_hooks_: a thread has exited; in a fork() child, the writer thread and the file
  // belong to the parent: stop recording.
  void thread_exited(uint64_t thread_key);
  void forked_child() noexcept;

  // --- writer thread ---
  static void* writer_main(void* self);
  void run();
  void collect();
  void emit(size_t count, bool resolve);
  void note_drops();
  void fail(const std::string& what) noexcept;
  void discard_staging() noexcept;

  ThreadRing* ring_for_this_thread() noexcept;
  ThreadRing* register_thread() noexcept;

  // What record() reads and writes, on the object's first cache line (after the vtable pointer):
  // a record() whose caches went cold meanwhile misses once here.
  const uint64_t id_ = g_next_recorder_id.fetch_add(1);
  const bool ticks_ = detail::ticks_pay();  // record() stamps ticks (tick_clock.h), not ns
  std::atomic<bool> open_{false};
  std::atomic<uint64_t> next_seq_{0};

  const std::string path_;
  const LiveRecorderOptions options_;
  std::unique_ptr<LiveTraceWriter> writer_;
  ContextResolver* resolver_ = nullptr;

  // Shared with recording threads and signal handlers, off the hot path.
  std::atomic<uint64_t> lost_without_ring_{0};
  std::atomic<bool> wake_{false};
  std::atomic<bool> forked_{false};
  std::atomic<int> signal_flush_{0};  // 1: requested by a signal handler; 2: done

  std::mutex rings_mutex_;
  std::vector<std::unique_ptr<ThreadRing>> rings_;
  uint64_t threads_created_ = 0;
  uint64_t recorded_by_freed_rings_ = 0;  // recorded/dropped counts of rings already freed
  uint64_t dropped_by_freed_rings_ = 0;

  // Writer-thread control.
  std::mutex mutex_;
  std::condition_variable cv_;  // wakes the writer
  std::condition_variable flushed_cv_;  // wakes flush() callers
  bool closing_ = false;
  bool stopped_ = false;
  uint64_t flush_target_ = 0;  // flush() wants every seq below this in the file
  uint64_t flushed_through_ = 0;  // every seq below this is in the file
  pthread_t thread_{};
  bool thread_started_ = false;  // under mutex_: not yet joined
  std::atomic<bool> writer_running_{false};  // for signal handlers, which take no lock
  std::atomic<bool> failed_{false};
  std::string error_;  // under mutex_

  // Writer-thread state.
  detail::TickConverter ticks_to_ns_;
  std::vector<LiveRecord> staging_;
  std::vector<size_t> run_starts_;  // where each ring's records begin in staging_
  detail::TraceOrder order_{static_cast<size_t>(options_.thread_buffer_events) * 8};
  uint64_t last_time_ = 0;
  std::atomic<uint64_t> written_{0};
  uint64_t drops_reported_ = 0;
  std::atomic<uint64_t> dropped_after_failure_{0};
  detail::StackResolution stacks_;
  detail::FreeSizes free_sizes_;

  // Thread exit and fork() (process_hooks.h), through a member rather than a second base class,
  // so that what record() reads keeps its place right after the one vtable pointer.
  struct ProcessHooks final : detail::ProcessHookClient {
    explicit ProcessHooks(Impl& owner) : impl(owner) {}
    void thread_exited(uint64_t thread_key) override { impl.thread_exited(thread_key); }
    void forked_child() noexcept override { impl.forked_child(); }
    Impl& impl;
  };
  ProcessHooks process_hooks_{*this};
};

// ------------------------------------------------------------------------------------------------

LiveRecorder::Impl::Impl(const std::string& path, const LiveTraceHeader& header, LiveRecorderOptions options)
    : path_(path), options_(options) {
  // The header is on disk at once: even a run killed right away leaves a readable (empty) trace.
  writer_ = std::make_unique<LiveTraceWriter>(path, header, options_.events_per_chunk, options_.zstd_level);

  detail::watch_process_events(&process_hooks_);
  if (ticks_) ticks_to_ns_.start();  // before any record() can stamp ticks
  open_.store(true);
  // The writer thread must not take the process's asynchronous signals: a handler on it would
  // wait for itself.
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  const int rc = pthread_create(&thread_, nullptr, &Impl::writer_main, this);
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (rc != 0) {
    open_.store(false);
    detail::unwatch_process_events(&process_hooks_);
    throw std::runtime_error("memreplay: cannot start the trace writer thread");
  }
  thread_started_ = true;
  writer_running_.store(true);
  if (options_.flush_at_exit) detail::watch_process_exit(this);
}

LiveRecorder::Impl::~Impl() {
  close();
  detail::unwatch_process_exit(this);
  detail::unwatch_process_events(&process_hooks_);
}

// --- hot path --------------------------------------------------------------------------------

ThreadRing* LiveRecorder::Impl::ring_for_this_thread() noexcept {
  for (const detail::RingCacheEntry& entry : t_thread.rings)
    if (entry.recorder == id_) return entry.ring;
  return register_thread();
}

ThreadRing* LiveRecorder::Impl::register_thread() noexcept {
  try {
    const uint64_t key = detail::this_thread_key();
    ThreadRing* ring = nullptr;
    {
      std::lock_guard lock(rings_mutex_);
      for (const auto& r : rings_)  // this thread's ring, fallen out of the small cache
        if (r->owner == key && !r->retired.load(std::memory_order_relaxed)) ring = r.get();
      if (!ring) {
        if (rings_.size() >= options_.max_threads) return nullptr;
        rings_.push_back(std::make_unique<ThreadRing>(options_.thread_buffer_events, key, detail::this_tid()));
        ring = rings_.back().get();
        ++threads_created_;
      }
    }
    detail::notify_at_thread_exit();
    t_thread.rings[t_thread.next_cache_entry++ % detail::kRingCacheSize] = {id_, ring};
    return ring;
  } catch (...) {
    return nullptr;
  }
}

bool LiveRecorder::Impl::record(const Event& event, uint64_t context) noexcept {
  if (!open_.load(std::memory_order_relaxed)) return false;
  ThreadRing* ring = ring_for_this_thread();
  if (ring == nullptr) {
    lost_without_ring_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  LiveRecord* slot = ring->reserve();
  if (slot == nullptr) {
    ring->count_drop();
    wake_.store(true, std::memory_order_relaxed);
    return false;
  }
  // Numbered only once there is room, so every number taken is published: no permanent gaps.
  slot->seq = next_seq_.fetch_add(1, std::memory_order_relaxed);
  slot->context = context;
  slot->thread = ring->tid();
  slot->event = event;
  // No time given: CPU ticks where those are cheaper than clock_gettime; the writer converts them.
  slot->time_in_ticks = event.time_ns == 0 && ticks_;
  if (event.time_ns == 0) slot->event.time_ns = ticks_ ? detail::read_ticks() : LiveRecorder::now_ns();
  if (ring->publish()) {  // half full: do not wait for the next drain
    wake_.store(true, std::memory_order_relaxed);
    cv_.notify_one();
  }
  return true;
}

// --- control -----------------------------------------------------------------------------------

bool LiveRecorder::Impl::flush() {
  if (t_thread.writer_of == this) return !failed_.load();
  std::unique_lock lock(mutex_);
  if (stopped_ || !thread_started_) return !failed_.load();
  const uint64_t target = next_seq_.load();
  flush_target_ = std::max(flush_target_, target);
  cv_.notify_one();
  flushed_cv_.wait(lock, [&] { return flushed_through_ >= target || stopped_ || failed_.load(); });
  return !failed_.load();
}

void LiveRecorder::Impl::close() noexcept {
  if (forked_.load()) return;  // the writer thread and the file belong to the parent
  open_.store(false);
  {
    std::lock_guard lock(mutex_);
    if (!thread_started_) return;
    closing_ = true;
  }
  cv_.notify_one();
  if (t_thread.writer_of == this) return;  // a resolver closing us: the writer finishes by itself
  pthread_join(thread_, nullptr);
  {
    std::lock_guard lock(mutex_);
    thread_started_ = false;
  }
  detail::unwatch_process_exit(this);  // nothing left to save at exit
}

void LiveRecorder::Impl::flush_on_signal() noexcept {
  // No lock here: the interrupted thread may hold it. The writer polls signal_flush_.
  if (forked_.load() || t_thread.writer_of == this || !writer_running_.load()) return;
  signal_flush_.store(1);  // again after an earlier signal the process survived (SIGINT in Python)
  for (int waited = 0; waited < kSignalFlushWaitMs && signal_flush_.load() != 2; ++waited) {
    struct timespec ms = {0, 1'000'000};
    nanosleep(&ms, nullptr);
  }
}

void LiveRecorder::Impl::forked_child() noexcept {
  forked_.store(true);
  open_.store(false);
}

void LiveRecorder::Impl::thread_exited(uint64_t thread_key) {
  if (forked_.load()) return;
  std::lock_guard lock(rings_mutex_);
  for (const auto& r : rings_)
    if (r->owner == thread_key) r->retired.store(true, std::memory_order_release);
}

// --- writer thread -----------------------------------------------------------------------------

void* LiveRecorder::Impl::writer_main(void* self) {
  auto* impl = static_cast<Impl*>(self);
  t_thread.writer_of = impl;
  impl->run();
  return nullptr;
}

void LiveRecorder::Impl::run() {
  auto next_flush = Clock::now() + options_.flush_interval;
  for (;;) {
    bool closing = false;
    bool flush_wanted = false;
    uint64_t flush_target = 0;
    {
      std::unique_lock lock(mutex_);
      cv_.wait_for(lock, options_.drain_interval, [&] {
        return closing_ || flush_target_ > flushed_through_ || wake_.load(std::memory_order_relaxed);
      });
      closing = closing_;
      flush_wanted = flush_target_ > flushed_through_;
      flush_target = flush_target_;
    }
    wake_.store(false, std::memory_order_relaxed);
    const bool on_signal = signal_flush_.load() == 1;

    collect();
    if (failed_.load()) {
      discard_staging();
    } else {
      const bool force = closing || on_signal;
      emit(order_.ready_prefix(staging_, force), /*resolve=*/!on_signal);
      note_drops();
    }

    const bool want_flush =
        closing || on_signal || Clock::now() >= next_flush || (flush_wanted && order_.next_seq() >= flush_target);
    if (want_flush && !failed_.load()) {
      try {
        if (closing)
          writer_->finish();
        else
          writer_->flush();
      } catch (const std::exception& e) {
        fail(e.what());
      }
      next_flush = Clock::now() + options_.flush_interval;
      std::lock_guard lock(mutex_);
      flushed_through_ = std::max(flushed_through_, order_.next_seq());
    }
    if (on_signal) signal_flush_.store(2);
    flushed_cv_.notify_all();
    if (closing) break;
  }
  const LiveRecorderStats totals = [&] {
    std::lock_guard lock(rings_mutex_);
    LiveRecorderStats s;
    s.dropped = dropped_by_freed_rings_ + lost_without_ring_.load() + dropped_after_failure_.load();
    for (const auto& r : rings_) s.dropped += r->dropped();
    return s;
  }();
  if (totals.dropped > 0)
    print_error(path_ + ": " + std::to_string(totals.dropped) +
                " events were dropped (the recording threads outpaced the writer); the trace is incomplete");
  writer_running_.store(false);
  std::lock_guard lock(mutex_);
  stopped_ = true;
  flushed_cv_.notify_all();
}

// Moves everything the rings hold into staging_, in sequence order, with time stamps in ns, and
// frees the rings of threads that have exited.
void LiveRecorder::Impl::collect() {
  run_starts_.clear();
  const size_t fresh = staging_.size();
  {
    std::lock_guard lock(rings_mutex_);
    for (auto it = rings_.begin(); it != rings_.end();) {
      ThreadRing& ring = **it;
      const bool retired = ring.retired.load(std::memory_order_acquire);
      const size_t before = staging_.size();
      ring.drain(staging_);
      if (staging_.size() != before) run_starts_.push_back(before);
      if (retired && ring.empty()) {
        recorded_by_freed_rings_ += ring.recorded();
        dropped_by_freed_rings_ += ring.dropped();
        it = rings_.erase(it);
      } else {
        ++it;
      }
    }
  }
  if (ticks_) {
    ticks_to_ns_.advance();  // after the drain: the bracket of every record it took
    for (size_t i = fresh; i < staging_.size(); ++i) {
      LiveRecord& r = staging_[i];
      if (r.time_in_ticks) r.event.time_ns = ticks_to_ns_.to_ns(r.event.time_ns);
    }
  }
  detail::TraceOrder::merge_runs(staging_, run_starts_);
}

void LiveRecorder::Impl::emit(size_t count, bool resolve) {
  if (count == 0) return;
  size_t done = 0;
  try {
    if (resolve) stacks_.resolve({staging_.data(), count}, resolver_, *writer_);
    for (; done < count; ++done) {
      LiveRecord& r = staging_[done];
      Event& e = r.event;
      order_.written(r.seq);
      e.time_ns = std::max(e.time_ns, last_time_);  // sequence order wins; time never goes back
      last_time_ = e.time_ns;
      if (e.kind == EventKind::annotation) {
        std::unique_ptr<KeyValues> metadata(reinterpret_cast<KeyValues*>(r.context));
        r.context = 0;
        writer_->append_annotation(e, metadata ? *metadata : KeyValues{});
        continue;
      }
      if (r.context != 0) detail::StackResolution::release(r, resolver_);  // not resolved (after a fatal signal)
      if (options_.fill_free_sizes) free_sizes_.fill(e);
      writer_->append(e);
    }
  } catch (const std::exception& e) {
    fail(e.what());
  }
  written_.fetch_add(done, std::memory_order_relaxed);
  staging_.erase(staging_.begin(), staging_.begin() + static_cast<ptrdiff_t>(done));
  if (done < count) discard_staging();  // a write error: the rest can never be written
}

// Drops since the last report become an annotation in the trace, where they happened.
void LiveRecorder::Impl::note_drops() {
  uint64_t dropped = dropped_by_freed_rings_ + lost_without_ring_.load(std::memory_order_relaxed);
  {
    std::lock_guard lock(rings_mutex_);
    for (const auto& r : rings_) dropped += r->dropped();
  }
  if (dropped == drops_reported_) return;
  drops_reported_ = dropped;
  Event e;
  e.kind = EventKind::annotation;
  e.time_ns = last_time_;
  try {
    writer_->append_annotation(e, {{"memreplay.dropped_events", std::to_string(dropped)}});
  } catch (const std::exception& ex) {
    fail(ex.what());
  }
}

void LiveRecorder::Impl::fail(const std::string& what) noexcept {
  if (failed_.exchange(true)) return;
  open_.store(false);
  try {
    {
      std::lock_guard lock(mutex_);
      error_ = what;
    }
    print_error("recording to " + path_ + " stopped: " + what + " (the trace keeps the " +
                std::to_string(writer_ ? writer_->events_appended() : 0) +
                " events written before; the program goes on)");
  } catch (...) {}
  flushed_cv_.notify_all();
}

void LiveRecorder::Impl::discard_staging() noexcept {
  for (LiveRecord& r : staging_) detail::StackResolution::release(r, resolver_);
  dropped_after_failure_.fetch_add(staging_.size(), std::memory_order_relaxed);
  staging_.clear();
}

// --- LiveRecorder ------------------------------------------------------------------------------

LiveRecorder::LiveRecorder(const std::string& path, const LiveTraceHeader& header, LiveRecorderOptions options)
    : impl_(std::make_unique<Impl>(path, header, options)) {}

LiveRecorder::~LiveRecorder() {
  // In a fork() child the writer thread does not exist and the locks may be held by threads that
  // do not either: leave everything as it is.
  if (impl_->forked_.load()) (void)impl_.release();
}

bool LiveRecorder::record(const Event& event, uint64_t context) noexcept {
  if (event.kind == EventKind::annotation) return annotate(event.device, {});
  return impl_->record(event, context);
}

bool LiveRecorder::annotate(uint32_t device, KeyValues metadata) noexcept {
  try {
    auto owned = std::make_unique<KeyValues>(std::move(metadata));
    Event e;
    e.kind = EventKind::annotation;
    e.device = device;
    if (!impl_->record(e, reinterpret_cast<uint64_t>(owned.get()))) return false;
    owned.release();  // the writer deletes it
    return true;
  } catch (...) {
    return false;
  }
}

bool LiveRecorder::flush() { return impl_->flush(); }
void LiveRecorder::close() noexcept { impl_->close(); }

void LiveRecorder::set_context_resolver(ContextResolver* resolver) {
  std::lock_guard lock(impl_->mutex_);
  impl_->resolver_ = resolver;
}

LiveRecorderStats LiveRecorder::stats() const {
  LiveRecorderStats s;
  std::lock_guard lock(impl_->rings_mutex_);
  s.recorded = impl_->recorded_by_freed_rings_;
  s.dropped = impl_->dropped_by_freed_rings_ + impl_->lost_without_ring_.load() + impl_->dropped_after_failure_.load();
  for (const auto& r : impl_->rings_) {
    s.recorded += r->recorded();
    s.dropped += r->dropped();
  }
  s.written = impl_->written_.load();
  s.threads = impl_->threads_created_;
  s.failed = impl_->failed_.load();
  return s;
}

std::string LiveRecorder::error() const {
  std::lock_guard lock(impl_->mutex_);
  return impl_->error_;
}

const std::string& LiveRecorder::path() const { return impl_->path_; }

uint64_t LiveRecorder::now_ns() noexcept {
  // Wall-clock time at the first call plus monotonic time since: epoch-based like the rest of the
  // format, yet never stepping back when NTP adjusts the clock.
  struct Base {
    uint64_t realtime_ns, monotonic_ns;
  };
  static const Base base = [] {
    timespec real{}, mono{};
    clock_gettime(CLOCK_REALTIME, &real);
    clock_gettime(CLOCK_MONOTONIC, &mono);
    return Base{static_cast<uint64_t>(real.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(real.tv_nsec),
                static_cast<uint64_t>(mono.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(mono.tv_nsec)};
  }();
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  const uint64_t mono = static_cast<uint64_t>(now.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(now.tv_nsec);
  return base.realtime_ns + (mono - base.monotonic_ns);
}

}  // namespace memreplay
