// The recording threads' clock. clock_gettime costs 20-25 ns even through the vDSO, and more in
// many VMs: often the largest part of a recorded event. The CPU's time-stamp counter costs a few
// ns. So a recording thread stores raw ticks and the writer thread turns them into the recorder's
// time (LiveRecorder::now_ns(): ns since the Unix epoch, never going back), as PyTorch's
// c10::ApproximateClock does.
//
// The writer reads a pair (ticks, now_ns()) right after each drain of the rings and interpolates
// between its last two pairs, which bracket the records of that drain:
//
//   ticks  ──P_prev──────r1────r2────────r3──P_now──►   r: records of this drain
//   ns       ns_prev     (linear in between)  ns_now
//
// A time stamp outside its bracket (a thread preempted between stamping and publishing, cores
// whose counters disagree) is clamped into it, so even a wrong or drifting counter moves a time
// stamp by no more than the time between two drains, and the writer still keeps time stamps
// non-decreasing in sequence order.
#pragma once

#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace memreplay::detail {

// True when read_ticks() is the cheaper clock here (an x86-64 CPU whose hypervisor does not
// trap rdtsc). Measured once per process.
bool ticks_pay() noexcept;

// Raw counter value: ordered with nothing, valid only on machines where ticks_pay().
inline uint64_t read_ticks() noexcept {
#if defined(__x86_64__)
  return __rdtsc();
#else
  return 0;
#endif
}

// Ticks -> ns on the writer thread (see the top of this file).
class TickConverter {
 public:
  struct Point {
    uint64_t ticks = 0;
    uint64_t ns = 0;
  };

  // The first pair, taken before any thread can stamp ticks.
  void start() noexcept { advance(read_point()); }
  // A new pair, taken after a drain: the bracket of the records just drained.
  void advance() noexcept { advance(read_point()); }
  void advance(Point now) noexcept {
    if (now_.ns != 0 && (now.ticks <= now_.ticks || now.ns < now_.ns)) return;  // migrated to a lagging core
    prev_ = now_.ns != 0 ? now_ : now;
    now_ = now;
    ns_per_tick_ = now_.ticks > prev_.ticks
                       ? static_cast<double>(now_.ns - prev_.ns) / static_cast<double>(now_.ticks - prev_.ticks)
                       : 0.0;
  }

  uint64_t to_ns(uint64_t ticks) const noexcept {
    if (ticks <= prev_.ticks) return prev_.ns;
    if (ticks >= now_.ticks) return now_.ns;
    return prev_.ns + static_cast<uint64_t>(static_cast<double>(ticks - prev_.ticks) * ns_per_tick_);
  }

  // (ticks, now_ns()) read as close together as this thread manages.
  static Point read_point() noexcept;

 private:
  Point prev_, now_;
  double ns_per_tick_ = 0.0;
};

}  // namespace memreplay::detail
