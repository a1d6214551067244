#include "results/advice.h"

#include <algorithm>
#include <cstdio>

#include "base/units.h"
#include "proto/trace_reader.h"
#include "replayer/replay_runner.h"
#include "results/replay_batch.h"

namespace memreplay::results {
namespace {

std::string policy_name(const std::string& spec) { return spec.substr(0, spec.find(':')); }
std::string policy_options(const std::string& spec) {
  const auto colon = spec.find(':');
  return colon == std::string::npos ? "" : spec.substr(colon + 1);
}

// Settings worth trying from `current`: each adds one option it does not set yet.
std::vector<std::string> candidate_specs(const std::string& current, bool capped) {
  std::vector<std::string> out;
  const std::string name = policy_name(current), options = policy_options(current);
  if (name != "pytorch") {
    out = {"pytorch", "pytorch:expandable_segments:True"};
  } else {
    std::vector<std::string> additions = {"expandable_segments:True", "max_split_size_mb:64", "max_split_size_mb:256",
                                          "roundup_power2_divisions:4"};
    if (capped) additions.push_back("garbage_collection_threshold:0.8");
    for (const auto& add : additions) {
      const std::string key = add.substr(0, add.find(':'));
      if (options.find(key) != std::string::npos) continue;
      out.push_back("pytorch:" + (options.empty() ? add : options + "," + add));
    }
  }
  if (name != "cuda_async") out.push_back("cuda_async");
  return out;
}

std::string calls(const ReplayMetrics& m) { return std::to_string(total_device_calls(m)); }

std::string percent_change(uint64_t before, uint64_t after) {
  if (before == 0) return "";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, " (%+.1f%%)", (double(after) / double(before) - 1) * 100);
  return buffer;
}

// "; fits in X" from the capacity search, with the failing capacity next to it.
std::string fit_text(const CandidateResult& c) {
  if (!c.fit) return "";
  const FitScan& f = *c.fit;
  const auto [fits, fails] = format_bytes_apart(f.smallest_fit_bytes, f.fails_below_smallest_bytes);
  std::string out = "; fits in " + fits + " (fails at " + fails + ")";
  if (!f.monotonic) {
    const auto [above, below] = format_bytes_apart(f.fits_above_bytes, f.fails_below_above_bytes);
    out += ", but not monotonically: it fails at " + below + " and fits at every tested capacity from " + above;
  }
  return out;
}

uint64_t count_empty_cache(const ReplayOptions& base) {
  TraceReader reader(base.trace_path);
  std::vector<Event> batch;
  uint64_t n = 0;
  while (reader.next_batch(batch))
    for (const auto& e : batch) n += e.kind == EventKind::empty_cache && e.device == base.trace_device;
  return n;
}

// The capacity search, uncapped: the smallest capacity the setting fits in. None when even the
// whole device is too small (nothing to search).
std::optional<FitScan> search_fit(const ReplayOptions& base, const std::string& policy, const FitSearch& search) {
  ReplayOptions probe = base;
  probe.policy_spec = policy;
  probe.capacity.reset();
  probe.continue_after_oom = false;
  probe.timeline_points = 1;
  if (run_replay(probe).oom_at_event) return std::nullopt;
  return scan_min_capacity(probe, search);
}

AdviceItem oom_item(const Advice& a, const std::vector<const CandidateResult*>& fitting) {
  const ReplayMetrics& now = a.current.metrics;
  const std::string cap = a.capacity ? format_bytes(*a.capacity) : "the device's " + format_bytes(now.device_memory);
  std::string evidence = a.current_policy + " fails at replay event " + std::to_string(*now.oom_at_event) +
                         " (trace event " + std::to_string(*now.oom_trace_event) + "), a " +
                         format_bytes(*now.oom_request_bytes) + " request";
  if (a.current.fit) {
    const auto [fits, fails] =
        format_bytes_apart(a.current.fit->smallest_fit_bytes, a.current.fit->fails_below_smallest_bytes);
    evidence += "; it needs " + fits + " (fails at " + fails + ")";
  }
  evidence += ".";
  if (fitting.empty()) {
    evidence += " Every setting tried runs out of memory or makes too many device calls at " + cap + ".";
    const CandidateResult* least = nullptr;  // the one that needs the least memory, if searched
    for (const auto& c : a.candidates)
      if (c.fit && (!least || c.fit->smallest_fit_bytes < least->fit->smallest_fit_bytes)) least = &c;
    if (least && (!a.current.fit || least->fit->smallest_fit_bytes < a.current.fit->smallest_fit_bytes))
      evidence += " Of those, " + least->paste + " needs the least" + fit_text(*least) + ".";
    return {"Out of memory at " + cap + ", and no setting tried fits there", "", "", evidence};
  }
  const CandidateResult& best = *fitting.front();
  evidence += " With " + best.paste + " it fits in " + cap + ": reserved peak " +
              format_bytes(best.metrics.reserved_peak) + ", device calls " + calls(best.metrics) + fit_text(best) + ".";
  return {"Out of memory at " + cap + ": set " + best.paste, best.paste, best.policy, evidence};
}

// The classic mistake: empty_cache() in a loop. `first`: the lane of the current setting without the
// calls (the candidates' quiet lanes follow it); the setting named with it is the call rule's winner
// among those lanes.
AdviceItem empty_cache_item(const Advice& a, const TraceReplays& replays, const std::vector<ReplayLane>& lanes,
                            size_t first) {
  const ReplayMetrics& now = a.current.metrics;
  const ReplayMetrics& quiet = a.current_without_empty_cache->metrics;
  // The setting to take with it: the rule's winner among the replays without the calls.
  const std::vector<ReplayMetrics> quiet_rows(replays.metrics.begin() + static_cast<std::ptrdiff_t>(first),
                                              replays.metrics.end());
  const Recommendation rule = recommend(quiet_rows, a.call_rule);
  const std::optional<size_t> best = rule.best ? std::optional<size_t>(first + *rule.best) : std::nullopt;
  const uint64_t with_calls = total_device_calls(now), without = total_device_calls(quiet);
  std::string evidence = std::to_string(a.empty_cache_calls) + " empty_cache() calls cost " +
                         std::to_string(with_calls - std::min(with_calls, without)) + " extra device calls (" +
                         std::to_string(without) + " -> " + std::to_string(with_calls) + "; reserved peak " +
                         format_bytes(quiet.reserved_peak) + " without them, " + format_bytes(now.reserved_peak) +
                         " with them).";
  std::string paste, policy;
  if (best) {
    const ReplayMetrics& b = replays.metrics[*best];
    policy = lanes[*best].policy;
    paste = paste_for(policy);
    evidence += " Without the calls and with " + paste + ": reserved peak " + format_bytes(b.reserved_peak) +
                ", device calls " + calls(b) + ".";
  }
  return {std::string(a.empty_cache_calls >= 3 ? "empty_cache() is called in a loop: " : "empty_cache() is called: ") +
              "drop the calls" + (paste.empty() ? "" : " and set " + paste),
          paste, policy, evidence};
}

// A candidate that qualifies under the call rule and fits, as an item against the current setting.
std::optional<AdviceItem> setting_item(const CandidateResult& c, const ReplayMetrics& now, bool current_fits,
                                       const std::string& cap) {
  const ReplayMetrics& m = c.metrics;
  // The current setting's own numbers stop at its OOM: nothing to compare with then.
  if (!current_fits)
    return AdviceItem{"Also fits in " + cap + ": " + c.paste, c.paste, c.policy,
                      "reserved peak " + format_bytes(m.reserved_peak) + "; device calls " + calls(m) + fit_text(c)};
  const std::string numbers = "reserved peak " + format_bytes(now.reserved_peak) + " -> " +
                              format_bytes(m.reserved_peak) + percent_change(now.reserved_peak, m.reserved_peak) +
                              "; device calls " + calls(now) + " -> " + calls(m) + fit_text(c);
  if (m.reserved_peak < now.reserved_peak)
    return AdviceItem{"Lower the reserved peak: " + c.paste, c.paste, c.policy, numbers};
  const bool same_size = m.reserved_peak <= now.reserved_peak + now.reserved_peak / 100;
  if (same_size && total_device_calls(m) * 2 <= total_device_calls(now))
    return AdviceItem{"Fewer device calls: " + c.paste, c.paste, c.policy, numbers};
  return std::nullopt;
}

std::optional<AdviceItem> gap_item(const Advice& a) {
  const ReplayMetrics& now = a.current.metrics;
  if (now.oom_at_event || now.fragmentation_at_peak <= 0.10 || now.reserved_peak == 0) return std::nullopt;
  const uint64_t gap = static_cast<uint64_t>(now.fragmentation_at_peak * double(now.reserved_peak));
  std::string fix, policy;
  for (const auto& c : a.candidates)
    if (c.standing == Standing::qualifies && c.metrics.reserved_peak < now.reserved_peak) {
      fix = c.paste, policy = c.policy;
      break;
    }
  return AdviceItem{
      "A large gap between allocated and reserved at the peak" + (fix.empty() ? std::string() : ": try " + fix), fix,
      policy,
      format_bytes(gap) + " (" + format_percent(now.fragmentation_at_peak) + ") of the " +
          format_bytes(now.reserved_peak) +
          " reserved at the peak is cached but not handed out even at the peak's most-used moment (up to " +
          format_percent(now.fragmentation_at_peak_max) + " at its least-used one); the floor (requested peak) is " +
          format_bytes(now.requested_peak) + "."};
}

}  // namespace

const std::vector<uint64_t>& common_gpu_sizes() {
  // Decimal GB, as the cards are sold: at most what each card reports (an H200's "141 GB" is
  // 150,109,880,320 bytes, 139.8 GiB; 141 GiB would be more memory than it has).
  constexpr uint64_t kGB = 1'000'000'000;
  static const std::vector<uint64_t> sizes = {24 * kGB, 40 * kGB, 48 * kGB, 80 * kGB, 94 * kGB, 141 * kGB};
  return sizes;
}

std::string paste_for(const std::string& spec) {
  const std::string name = policy_name(spec), options = policy_options(spec);
  if (name == "pytorch")
    return options.empty() ? "unset PYTORCH_CUDA_ALLOC_CONF" : "PYTORCH_CUDA_ALLOC_CONF=" + options;
  if (name == "cuda_async") return "PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync";
  if (name == "passthrough") return "PYTORCH_NO_CUDA_MEMORY_CACHING=1";
  return "--policy " + spec;
}

Advice advise(const ReplayOptions& base, const std::string& current_policy, bool with_fit, double max_call_ratio) {
  Advice advice;
  advice.trace = base.trace_path;
  advice.current_policy = current_policy;
  advice.capacity = base.capacity;
  advice.gpu_sizes = common_gpu_sizes();
  advice.empty_cache_calls = count_empty_cache(base);
  const std::vector<std::string> specs = candidate_specs(current_policy, base.capacity.has_value());

  std::vector<ReplayLane> lanes = {{current_policy, false}};
  for (const auto& s : specs) lanes.push_back({s, false});
  const bool without_empty_cache = advice.empty_cache_calls > 0;
  if (without_empty_cache) {
    lanes.push_back({current_policy, true});
    for (const auto& s : specs) lanes.push_back({s, true});
  }
  const TraceReplays replays = replay_lanes(base, lanes);
  const auto result = [&](size_t lane) {
    return CandidateResult{lanes[lane].policy, paste_for(lanes[lane].policy), replays.metrics[lane], {}, {}};
  };

  // The rule over the current setting (row 0) and every candidate at this capacity.
  const std::vector<ReplayMetrics> rows(replays.metrics.begin(), replays.metrics.begin() + 1 + specs.size());
  advice.call_rule = call_rule_for(base, current_policy, rows[0], max_call_ratio);
  const Recommendation rule = recommend(rows, advice.call_rule);
  advice.current = result(0);
  advice.current.standing = rule.standing[0];
  for (const size_t i : rule.ranking) {
    if (i == 0) continue;
    advice.candidates.push_back(result(i));
    advice.candidates.back().standing = rule.standing[i];
  }
  if (rule.best) advice.recommended = lanes[*rule.best].policy;

  // The capacity search costs ~25 replays: the current setting and the three best candidates only.
  // Settings that ran out of memory at this capacity rank by how much they need (their smallest
  // fit), not by a reserved peak cut short at the OOM: each of them is searched.
  if (with_fit) {
    advice.current.fit = search_fit(base, current_policy, advice.fit_search);
    for (size_t i = 0; i < advice.candidates.size(); ++i)
      if (i < 3 || advice.candidates[i].standing == Standing::ran_out_of_memory)
        advice.candidates[i].fit = search_fit(base, advice.candidates[i].policy, advice.fit_search);
    const auto first_oom = std::find_if(advice.candidates.begin(), advice.candidates.end(),
                                        [](const auto& c) { return c.standing == Standing::ran_out_of_memory; });
    const auto needs = [](const CandidateResult& c) { return c.fit ? c.fit->smallest_fit_bytes : UINT64_MAX; };
    std::stable_sort(first_oom, advice.candidates.end(),
                     [&](const CandidateResult& a, const CandidateResult& b) { return needs(a) < needs(b); });
  }

  const ReplayMetrics& now = advice.current.metrics;
  std::vector<const CandidateResult*> advised;  // qualifying candidates, in rank order
  for (const auto& c : advice.candidates)
    if (c.standing == Standing::qualifies) advised.push_back(&c);
  const bool current_fits = !now.oom_at_event;
  if (!current_fits) advice.items.push_back(oom_item(advice, advised));  // names advised[0], if any
  if (without_empty_cache) {
    advice.current_without_empty_cache = result(specs.size() + 1);
    advice.items.push_back(empty_cache_item(advice, replays, lanes, specs.size() + 1));
  }
  const std::string cap = format_bytes(base.capacity.value_or(now.device_memory));
  for (size_t i = current_fits ? 0 : 1; i < advised.size(); ++i)
    if (auto item = setting_item(*advised[i], now, current_fits, cap)) advice.items.push_back(std::move(*item));
  if (auto item = gap_item(advice)) advice.items.push_back(std::move(*item));

  ReplayOptions current = base;
  current.policy_spec = current_policy;
  advice.peak = capture_peak_state(current, now);
  return advice;
}

}  // namespace memreplay::results
