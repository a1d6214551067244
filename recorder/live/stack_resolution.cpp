#include "recorder/live/stack_resolution.h"

namespace memreplay::detail {

void StackResolution::resolve(std::span<LiveRecord> records, ContextResolver* resolver, LiveTraceWriter& writer) {
  contexts_.clear();
  pending_.clear();
  const bool stable = resolver && resolver->stable_tokens();
  std::map<Key, size_t> batch;  // stable: each (token, thread) asked once
  for (size_t i = 0; i < records.size(); ++i) {
    LiveRecord& r = records[i];
    if (r.context == 0 || r.event.kind == EventKind::annotation) continue;
    if (!resolver) {
      r.context = 0;
      continue;
    }
    if (stable) {
      const Key key{r.context, r.thread};
      if (auto it = stable_stacks_.find(key); it != stable_stacks_.end()) {
        r.event.stack = it->second;
        r.context = 0;
        continue;
      }
      auto [it, inserted] = batch.try_emplace(key, contexts_.size());
      if (inserted) contexts_.push_back({r.context, r.thread});
      pending_.push_back({i, it->second});
    } else {
      pending_.push_back({i, contexts_.size()});
      contexts_.push_back({r.context, r.thread});
    }
  }
  if (contexts_.empty()) return;
  frames_.clear();
  try {
    resolver->resolve(contexts_, frames_);
  } catch (...) {
    frames_.clear();
  }
  std::vector<uint32_t> stacks(contexts_.size(), 0);
  for (size_t k = 0; k < contexts_.size(); ++k) {
    if (k < frames_.size() && !frames_[k].empty()) stacks[k] = writer.intern_stack(frames_[k]);
    if (stable) stable_stacks_[{contexts_[k].token, contexts_[k].thread}] = stacks[k];
  }
  for (const auto& [record, context] : pending_) {
    records[record].event.stack = stacks[context];
    records[record].context = 0;
  }
}

void StackResolution::release(LiveRecord& record, ContextResolver* resolver) noexcept {
  if (record.event.kind == EventKind::annotation) {
    delete reinterpret_cast<KeyValues*>(record.context);
  } else if (record.context != 0 && resolver && !resolver->stable_tokens()) {
    const uint64_t token = record.context;
    resolver->discard({&token, 1});
  }
  record.context = 0;
}

}  // namespace memreplay::detail
