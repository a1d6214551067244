// A StreamOrder that remembers what the live allocator asked of it: the waits, in order, and the
// device synchronizations. The tests' stand-in for CUDA events.
#pragma once

#include <mutex>
#include <utility>
#include <vector>

#include "replayer/live/stream_order.h"

namespace memreplay::testing {

struct StreamOrderLog {
  std::mutex mutex;
  std::vector<std::pair<StreamId, StreamId>> waits;  // (waiter, producer)
  int synchronizations = 0;
};

class FakeStreamOrder final : public StreamOrder {
 public:
  explicit FakeStreamOrder(StreamOrderLog& log) : log_(log) {}
  void wait(StreamId waiter, StreamId producer) override {
    const std::lock_guard lock(log_.mutex);
    log_.waits.emplace_back(waiter, producer);
  }
  void synchronize() override {
    const std::lock_guard lock(log_.mutex);
    ++log_.synchronizations;
  }

 private:
  StreamOrderLog& log_;
};

}  // namespace memreplay::testing
