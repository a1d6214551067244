// `memreplay advise`: what to change, ranked, each with the evidence of replays of this trace.
//
// From one pass over the trace (replay_lanes), the current policy and every candidate setting are
// replayed side by side at the given capacity, each also without the trace's empty_cache() calls
// when it has some. Then, in this order:
//   - under a cap the current setting does not fit in: that OOM (where, how large, the smallest
//     capacity it fits in) and the setting that fits there, if one does;
//   - empty_cache() in a loop: calls, the device calls they cost, the setting that gives the same
//     reserved peak without them;
//   - the candidate settings, ranked by the one rule of results/recommendation.h (a replay that
//     ran out of memory or makes too many device calls is never advised; the first setting advised
//     is the rule's winner), each with the string to paste, reserved peak and device calls before
//     and after, and the smallest capacity that fits (the search of results/fit_scan.h);
//   - a large gap between allocated and reserved at the peak, the stacks that own the peak;
//   - which of the common GPU sizes each setting fits on.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "replayer/metrics.h"
#include "replayer/replay_options.h"
#include "results/fit_scan.h"
#include "results/peak_state.h"
#include "results/recommendation.h"

namespace memreplay::results {

struct CandidateResult {
  std::string policy;  // spec
  std::string paste;  // what to set: "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
  ReplayMetrics metrics;  // at the advice's capacity
  Standing standing = Standing::qualifies;  // under the call rule
  std::optional<FitScan> fit;  // the smallest capacity search, when run
};

struct AdviceItem {
  std::string title;  // one line
  std::string paste;  // empty for a finding that is not a setting
  std::string policy;  // the spec `paste` sets ("" for none)
  std::string evidence;  // the numbers, one or two sentences
};

struct Advice {
  std::string trace;
  std::string current_policy;
  std::optional<uint64_t> capacity;  // the cap every replay ran under
  FitSearch fit_search;  // how smallest capacities were searched
  CandidateResult current;
  std::vector<CandidateResult> candidates;  // ranked by the rule, best first
  CallRule call_rule;
  // The rule's winner among the current setting and the candidates (the current one when nothing
  // tried does better); none when nothing fits at the capacity.
  std::optional<std::string> recommended;
  std::vector<AdviceItem> items;  // ranked
  uint64_t empty_cache_calls = 0;
  std::optional<CandidateResult> current_without_empty_cache;
  PeakState peak;  // the current policy at its reserved peak
  std::vector<uint64_t> gpu_sizes;  // bytes, common_gpu_sizes()
};

// The sizes the table of GPUs uses: 24, 40, 48, 80, 94, 141 GB (decimal, as sold).
const std::vector<uint64_t>& common_gpu_sizes();
// The setting to paste for a spec: "pytorch:a:b" -> "PYTORCH_CUDA_ALLOC_CONF=a:b".
std::string paste_for(const std::string& spec);

// `with_fit`: also search the smallest fitting capacity of the current setting and of the three
// best candidates (about 25 replays each).
Advice advise(const ReplayOptions& base, const std::string& current_policy, bool with_fit,
              double max_call_ratio = kDefaultMaxCallRatio);

// `frames_of(stack)`: "file:line name" lines of a stack id, for the peak's stacks.
nlohmann::json advice_json(const Advice& advice, const std::vector<std::vector<std::string>>& top_stack_frames);
std::string advice_text(const Advice& advice, const std::vector<std::vector<std::string>>& top_stack_frames);

}  // namespace memreplay::results
