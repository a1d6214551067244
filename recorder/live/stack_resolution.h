// Context tokens into stack ids, on the writer thread. record() stores only a token (a Python
// traceback, a return address: whatever the ContextResolver understands), as turning it into
// frames takes locks and allocates. Before a batch of records is written, every token in it goes
// to the resolver in one call; the frames come back as stack ids interned in the trace. With
// stable tokens (equal token and thread, equal frames) each pair is resolved once per recording.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <utility>
#include <vector>

#include "recorder/live/live_recorder.h"
#include "recorder/live/thread_ring.h"

namespace memreplay::detail {

class StackResolution {
 public:
  // Sets event.stack and clears context in every record of `records` that has a token (not
  // annotations: their context is their metadata). Without a resolver the tokens are dropped; a
  // resolver that throws leaves the events without stacks.
  void resolve(std::span<LiveRecord> records, ContextResolver* resolver, LiveTraceWriter& writer);

  // What a record that will not be resolved holds, let go: an annotation's metadata is deleted,
  // a token is handed back to the resolver to release where that is safe.
  static void release(LiveRecord& record, ContextResolver* resolver) noexcept;

 private:
  using Key = std::pair<uint64_t, uint32_t>;  // (token, thread)
  std::vector<ContextResolver::Context> contexts_;
  std::vector<std::pair<size_t, size_t>> pending_;  // (record index, contexts_ index)
  std::vector<std::vector<FrameText>> frames_;
  std::map<Key, uint32_t> stable_stacks_;
};

}  // namespace memreplay::detail
