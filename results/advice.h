// `memreplay advise`: what to change, ranked, each with the evidence of replays of this trace.
//
// From one pass over the trace (replay_lanes), the current policy and every candidate setting are
// replayed side by side, each also without the trace's empty_cache() calls when it has some. Then:
//   - candidates ranked by reserved peak saved (replays that ran out of memory are left out);
//     each with the string to paste, reserved peak and device calls before and after, and the
//     smallest capacity that fits (fit_scan);
//   - which of the common GPU sizes each fits on;
//   - the classic mistakes, with numbers: empty_cache() in a loop (calls, the device mallocs and
//     frees they cost, the setting that gives the same reserved peak without them), a large gap
//     between allocated and reserved at the peak, the stacks that own the peak.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "replayer/metrics.h"
#include "replayer/replay_options.h"
#include "results/peak_state.h"

namespace memreplay::results {

struct CandidateResult {
  std::string policy;  // spec
  std::string paste;  // what to set: "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
  ReplayMetrics metrics;
  std::optional<uint64_t> smallest_fit_bytes;  // with fit on
  std::optional<uint64_t> fits_above_bytes;
};

struct AdviceItem {
  std::string title;  // one line
  std::string paste;  // empty for a finding that is not a setting
  std::string evidence;  // the numbers, one or two sentences
};

struct Advice {
  std::string trace;
  std::string current_policy;
  CandidateResult current;
  std::vector<CandidateResult> candidates;  // ranked, best first; OOM replays last
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

// `with_fit`: also find each candidate's smallest fitting capacity (about 20 replays each).
Advice advise(const ReplayOptions& base, const std::string& current_policy, bool with_fit);

// `frames_of(stack)`: "file:line name" lines of a stack id, for the peak's stacks.
nlohmann::json advice_json(const Advice& advice, const std::vector<std::vector<std::string>>& top_stack_frames);
std::string advice_text(const Advice& advice, const std::vector<std::vector<std::string>>& top_stack_frames);

}  // namespace memreplay::results
