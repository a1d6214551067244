#include "recorder/live/free_sizes.h"

namespace memreplay::detail {

void FreeSizes::fill(Event& e) {
  if (e.has_flag(kFailed)) return;
  auto remember = [&](Table table, uint64_t key) { live_[table][key] = e.size; };
  auto look_up = [&](Table table, uint64_t key, bool forget) {
    auto& sizes = live_[table];
    auto it = sizes.find(key);
    if (it == sizes.end()) return;
    if (e.size == 0) e.size = it->second;
    if (forget) sizes.erase(it);
  };
  switch (e.kind) {
    case EventKind::alloc: remember(kBlocks, e.address); break;
    case EventKind::free_requested: look_up(kBlocks, e.address, false); break;
    case EventKind::free_completed: look_up(kBlocks, e.address, true); break;
    case EventKind::segment_alloc: remember(kSegments, e.address); break;
    case EventKind::segment_free: look_up(kSegments, e.address, true); break;
    case EventKind::physical_alloc: remember(kPhysical, e.aux); break;
    case EventKind::physical_free: look_up(kPhysical, e.aux, true); break;
    default: break;
  }
}

}  // namespace memreplay::detail
