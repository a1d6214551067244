// What `memreplay info` reports about a trace: events per kind, devices, streams, duration, and the
// peak of live requested bytes (the policy-independent lower bound) with the stacks live there.
//
// Events per kind count what was recorded, exactly as the source's own entries (a snapshot's
// actions): the rebuilt starting state of a trace that starts mid-run (kPreexisting events) and
// events an importer inferred (kInferred) are counted apart, and a device call that failed
// (kFailed, from the interposer) is counted apart and never live.
//
// Private pools (CUDA graphs, torch.cuda.MemPool) are listed with what each held: the pool table
// comes from the header (an imported snapshot) or from the annotations a memreplay.torch trace
// announces each pool with; the per-pool counts from every event's pool.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "proto/event.h"
#include "proto/frame_text.h"

namespace memreplay {

class TraceReader;

struct StackShare {
  uint32_t stack = 0;  // 0 = no stack recorded
  uint64_t bytes = 0;  // live requested bytes from this stack at the peak
  uint64_t blocks = 0;
};

struct DeviceSummary {
  uint32_t device = 0;
  std::map<std::string, uint64_t> events_per_kind;  // keyed by PyTorch action names
  std::set<uint64_t> streams;
  uint64_t first_time_ns = 0;
  uint64_t last_time_ns = 0;
  uint64_t peak_requested_bytes = 0;
  uint64_t peak_event = 0;  // index in the whole trace of the event that reached the peak
  uint64_t peak_time_ns = 0;
  std::vector<StackShare> top_stacks_at_peak;  // largest first
  // The recorded reserved peak: the most the segment events (cudaMalloc, mapped ranges) held at
  // once, the starting state included; 0 in a trace without segment events.
  uint64_t peak_reserved_bytes = 0;
  bool has_segment_events = false;
  bool has_allocations = false;  // an alloc event (failed calls are never counted)
  // False when the trace holds the device's segments but not one allocation of the program: its
  // allocator suballocates where no recorder looked (CuPy's pool, JAX's BFC under the
  // interposer), and a replay has nothing to place.
  bool allocations_visible() const { return has_allocations || !has_segment_events; }
  // The rebuilt state at the first kept entry (kPreexisting events), apart from the recorded ones.
  struct StartingState {
    uint64_t segments = 0, segment_bytes = 0;  // cudaMalloc segments and mapped expandable ranges
    uint64_t blocks = 0, block_bytes = 0;  // live blocks, requested bytes
  } starting_state;
  std::map<std::string, uint64_t> inferred_per_kind;  // kInferred events (e.g. empty_cache)
  std::map<std::string, uint64_t> failed_per_kind;  // kFailed events: device calls that failed
  // What each pool held (0 = the default pool). Counts are of recorded events (the rebuilt
  // starting state apart, as above); the peaks include the starting state.
  struct Pool {
    uint64_t allocs = 0;
    uint64_t captured_allocs = 0;  // allocs flagged kCaptured (made under a CUDA graph capture)
    uint64_t segments = 0;  // cudaMalloc segments and mapped expandable ranges
    uint64_t peak_reserved_bytes = 0;  // the most its segments held at once
    uint64_t peak_requested_bytes = 0;  // the most its live blocks' requested bytes reached
  };
  std::map<uint32_t, Pool> pools;
};

// A private pool as the trace names it: kind "graph" (a capture's own pool) or "mempool"
// (torch.cuda.MemPool, graph_pool_handle()), empty when unknown; PyTorch's MempoolId_t.
struct PoolName {
  uint32_t id = 0;
  std::string kind;
  uint64_t torch_id_first = 0, torch_id_second = 0;
  std::string name;
  friend bool operator==(const PoolName&, const PoolName&) = default;
};

// The pool a memreplay.torch annotation announces (keys pool, torch_pool_id "A,B", kind), or
// nullopt for any other annotation.
std::optional<PoolName> pool_announced(const KeyValues& annotation);

// Two passes over the same events: the first finds each device's peak, the second collects the
// blocks live at it. Feed all events to add() in the first pass, call start_second_pass(), feed
// them again to add(), then finish().
class TraceSummarizer {
 public:
  explicit TraceSummarizer(size_t top_stacks = 10) : top_stacks_(top_stacks) {}
  void add(std::span<const Event> events, uint64_t first_index);
  void start_second_pass();
  std::vector<DeviceSummary> finish();

 private:
  struct Live {
    uint64_t requested;
    uint32_t stack;
    uint32_t pool;
  };
  struct PoolBytes {
    uint64_t reserved = 0, requested = 0;
  };
  struct DeviceState {
    DeviceSummary summary;
    std::unordered_map<uint64_t, Live> live;
    uint64_t live_bytes = 0;
    uint64_t reserved_bytes = 0;  // of every pool
    bool captured = false;
    std::array<uint64_t, kEventKindCount> kind_counts{}, inferred_counts{}, failed_counts{};
    std::unordered_map<uint32_t, StackShare> stacks_at_peak;
    std::map<uint32_t, PoolBytes> pool_bytes;
  };
  void add_one(const Event& event, uint64_t index);
  static void count_pool(DeviceState& state, const Event& event);

  size_t top_stacks_;
  bool second_pass_ = false;
  std::map<uint32_t, DeviceState> devices_;
};

// The whole summary of a trace read from its start: both passes, and the pool table (the
// header's, then the pools its annotations announce, by id).
struct TraceSummary {
  std::vector<PoolName> pools;
  std::vector<DeviceSummary> devices;
};
TraceSummary summarize_trace(TraceReader& reader, size_t top_stacks = 10);

// summarize_trace with the header, as `memreplay info --json` writes it (and memreplay's
// Trace.info() returns): `path` names the trace.
nlohmann::json trace_summary_json(TraceReader& reader, const std::string& path);

}  // namespace memreplay
