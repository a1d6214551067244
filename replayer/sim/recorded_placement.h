// RecordedPlacement: where the trace says the driver put each cudaMalloc, followed for as long as
// the replay makes the trace's own sequence of cudaMalloc and cudaFree calls.
//
// The driver's placement depends on the process (a host mapping such as PyTorch's history buffer
// growing, a library's workspace) in ways no model predicts (docs/driver-address-model.md). But
// the trace records it: each segment_alloc carries the address the driver returned. While the
// replay's device calls are the recorded ones, in the same order, the driver saw the same calls,
// so the recorded addresses are where it put them; best fit then breaks its ties between equal
// free blocks as the live run did. At the first call that differs (another policy or config, a
// cap), the replay leaves the recorded calls for good and the fitted model places the rest.
//
//   trace:   segment_alloc(A, 20 MiB) ... segment_free(A) ... segment_alloc(B, 16 MiB)
//   replay:  malloc(20 MiB) -> A        free(A)             malloc(16 MiB) -> B    in step
//            malloc(2 MiB)  -> model                                               left for good
//
// The two sides arrive in either order: an inferred empty_cache comes before the segment_free
// entries it explains, so the replay's frees may run ahead of the trace's; a malloc needs the
// recorded address at once, so the trace's malloc must already be known.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>

namespace memreplay {

class RecordedPlacement {
 public:
  // The trace's own calls, in trace order.
  void recorded_malloc(uint64_t address, uint64_t bytes);
  void recorded_free(uint64_t address);

  // The replay's cudaMalloc of `bytes`: the address the trace recorded for that same call while
  // the replay is in step and `can_take` accepts it; nullopt once it is not (the call does not
  // match, the trace has not shown it, the address cannot be taken), and from then on.
  std::optional<uint64_t> replay_malloc(uint64_t bytes, const std::function<bool(uint64_t address)>& can_take);
  // The replay's cudaFree of `address`.
  void replay_free(uint64_t address);
  // The replay leaves the recorded calls (a recorded address that cannot be used, say).
  void leave();

  bool in_step() const { return in_step_; }
  // Whether replay_malloc ever gave a recorded address.
  bool followed() const { return followed_; }

  // How far one side may run ahead of the other before the replay is taken to have left.
  static constexpr size_t kMaxAhead = 1 << 16;

 private:
  struct Call {
    bool is_free;
    uint64_t address;
    uint64_t bytes;
  };
  // The trace's malloc comes right before the alloc that made it: by the trace's next call, a
  // replay in step has made it.
  bool malloc_unmade() const { return !recorded_ahead_.empty() && !recorded_ahead_.back().is_free; }

  std::deque<Call> recorded_ahead_;  // recorded, not yet made by the replay
  std::deque<uint64_t> replay_ahead_;  // frees the replay made before the trace showed them
  bool in_step_ = true;
  bool followed_ = false;
};

}  // namespace memreplay
