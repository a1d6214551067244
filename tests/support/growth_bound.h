// How few device calls can an online allocator make while it keeps its reserved peak within
// 1.02 x the requested peak? The floor under the `memreplay` policy's calls target (<= PyTorch
// default's), printed per shared trace by tests/memreplay_policy_test.cpp and checked on small
// curves by tests/memreplay_growth_bound_test.cpp.
//
// The argument. An online allocator does not know where the peak will be: after every event the
// trace may end (or the rest stay below what is live now), and then the highest live requested
// bytes so far, H(t), is the requested peak. So to keep reserved <= 1.02 x requested peak on every
// trace it must keep mapped(t) <= 1.02 x H(t) at every t, while mapped(t) >= L(t), the live
// requested bytes. A call that raises mapped bytes (cudaMalloc or cuMemMap: a "growth call") can
// raise it by any amount; unmaps only lower it. min_growth_calls() counts the growth calls of the
// greedy schedule: whenever L passes what is mapped, grow once to 1.02 x H(now).
//
// Greedy is optimal. Let g_1 < g_2 < ... be greedy's growth times; any feasible schedule P has made
// at least k growth calls by g_k. k = 1: L(g_1) > 0 and P has mapped nothing before its first
// growth call. k -> k+1: if P made more than k calls by g_k we are done; else its last growth call
// was at some s <= g_k and left it with at most 1.02 x H(s) <= 1.02 x H(g_k) mapped, which without
// another growth call it can only lower. Greedy grows at g_{k+1} because L(g_{k+1}) > 1.02 x H(g_k),
// so P needs a growth call in (g_k, g_{k+1}]. Hence no schedule, online or not, makes fewer growth
// calls than greedy, and every device-call count (mapped growth + unmaps) is at least that.
// Rounding is where the argument is weakest. A policy that maps whole 2 MiB pages cannot keep
// mapped(t) <= 1.02 x H(t) while H is small (one page is 2% of 100 MiB), and whatever it is made
// to map there is headroom for its later growth. So the strict floor (slack 0) binds only
// policies that keep the 1.02 x line at every moment beyond what rounding forces; a policy allowed
// `slack_bytes` more at every moment (one page: what a page-granular allocator cannot avoid) has
// the floor min_growth_calls(live, slack). The test names a trace impossible only when even the
// one-page floor is above PyTorch's calls (docs/memreplay-policy.md).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

#include "replayer/bound/offline_bound.h"

namespace memreplay::testing {

// The most a policy may have mapped when `high` is the highest live requested bytes so far:
// 1.02 x high, rounded up (a larger limit can only lower the bound).
inline uint64_t mapped_limit(uint64_t high) { return (high * 102 + 99) / 100; }

// Growth calls of the greedy schedule over `live` (live requested bytes after each step), each
// growth to 1.02 x H plus `slack_bytes`.
inline uint64_t min_growth_calls(const std::vector<uint64_t>& live, uint64_t slack_bytes = 0) {
  uint64_t calls = 0;
  uint64_t mapped = 0;
  uint64_t high = 0;
  for (const uint64_t bytes : live) {
    high = std::max(high, bytes);
    if (bytes > mapped) {
      ++calls;
      mapped = mapped_limit(high) + slack_bytes;
    }
  }
  return calls;
}

// Live requested bytes after each replay event, from the trace's block lifetimes. The blocks that
// share event 0 (a ring-buffer trace's starting state, then its first allocation) reach a policy
// one at a time, in trace order: each is a step of its own.
inline std::vector<uint64_t> live_curve(const std::vector<Lifetime>& blocks) {
  std::vector<uint64_t> live;
  int64_t bytes = 0;
  std::map<uint64_t, int64_t> change;  // replay event -> Σ sizes allocated - freed there
  for (const Lifetime& block : blocks) {
    if (block.lower == 0) {
      bytes += static_cast<int64_t>(block.size);
      live.push_back(static_cast<uint64_t>(bytes));
    } else {
      change[block.lower] += static_cast<int64_t>(block.size);
    }
    change[block.upper] -= static_cast<int64_t>(block.size);
  }
  for (const auto& [event, delta] : change) {
    bytes += delta;
    live.push_back(static_cast<uint64_t>(bytes));
  }
  return live;
}

}  // namespace memreplay::testing
