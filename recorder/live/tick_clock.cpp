#include "recorder/live/tick_clock.h"

#include <algorithm>

#include "recorder/live/live_recorder.h"

namespace memreplay::detail {
namespace {

// Ticks not read before the instructions ahead of it have completed: on the writer thread, a
// pair taken after a drain then really bounds the records drained.
uint64_t ordered_ticks() noexcept {
#if defined(__x86_64__)
  _mm_lfence();
  return __rdtsc();
#else
  return 0;
#endif
}

bool measure_ticks_pay() noexcept {
#if defined(__x86_64__)
  // Best of three rounds of 64 reads each, so that a preemption does not decide.
  uint64_t ticks_cost = UINT64_MAX, clock_cost = UINT64_MAX;
  volatile uint64_t sink = 0;
  for (int round = 0; round < 3; ++round) {
    const uint64_t t0 = LiveRecorder::now_ns();
    for (int i = 0; i < 64; ++i) sink = sink + read_ticks();
    const uint64_t t1 = LiveRecorder::now_ns();
    for (int i = 0; i < 64; ++i) sink = sink + LiveRecorder::now_ns();
    const uint64_t t2 = LiveRecorder::now_ns();
    ticks_cost = std::min(ticks_cost, t1 - t0);
    clock_cost = std::min(clock_cost, t2 - t1);
  }
  // A hypervisor that traps rdtsc makes it cost microseconds: then clock_gettime stays.
  return ticks_cost < clock_cost;
#else
  return false;
#endif
}

}  // namespace

bool ticks_pay() noexcept {
  static const bool pays = measure_ticks_pay();
  return pays;
}

TickConverter::Point TickConverter::read_point() noexcept {
  // Best of three: a preemption between the reads would pair the ticks with a later time.
  Point best;
  uint64_t best_span = UINT64_MAX;
  for (int i = 0; i < 3; ++i) {
    const uint64_t before = ordered_ticks();
    const uint64_t ns = LiveRecorder::now_ns();
    const uint64_t after = ordered_ticks();
    if (after - before < best_span) {
      best_span = after - before;
      best = {before + (after - before) / 2, ns};
    }
  }
  return best;
}

}  // namespace memreplay::detail
