#include "results/advice.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "base/units.h"
#include "proto/trace_reader.h"
#include "results/check.h"
#include "results/fit_scan.h"
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

uint64_t device_calls(const ReplayMetrics& m) { return total_device_calls(m); }

std::string percent_change(uint64_t before, uint64_t after) {
  if (before == 0) return "";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, " (%+.1f%%)", (double(after) / double(before) - 1) * 100);
  return buffer;
}

std::string fit_text(const CandidateResult& c) {
  if (!c.smallest_fit_bytes) return "";
  if (*c.fits_above_bytes == *c.smallest_fit_bytes) return "; fits in " + format_bytes(*c.smallest_fit_bytes);
  return "; fits in " + format_bytes(*c.smallest_fit_bytes) + ", and at every tested capacity from " +
         format_bytes(*c.fits_above_bytes) + " (not monotonic)";
}

uint64_t count_empty_cache(const ReplayOptions& base) {
  TraceReader reader(base.trace_path);
  std::vector<Event> batch;
  uint64_t n = 0;
  while (reader.next_batch(batch))
    for (const auto& e : batch) n += e.kind == EventKind::empty_cache && e.device == base.trace_device;
  return n;
}

std::string gpu_label(uint64_t bytes) { return std::to_string(bytes / 1'000'000'000) + "GB"; }

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

Advice advise(const ReplayOptions& base, const std::string& current_policy, bool with_fit) {
  Advice advice;
  advice.trace = base.trace_path;
  advice.current_policy = current_policy;
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
  // The capacity search costs ~20 replays: the current setting and the three best candidates only.
  const auto add_fit = [&](CandidateResult& c) {
    if (with_fit && !c.metrics.oom_at_event) {
      ReplayOptions probe = base;
      probe.policy_spec = c.policy;
      probe.capacity.reset();
      const FitScan scan = scan_min_capacity(probe, 16 << 20, 8);
      c.smallest_fit_bytes = scan.smallest_fit_bytes;
      c.fits_above_bytes = scan.fits_above_bytes;
    }
  };
  advice.current = result(0);
  add_fit(advice.current);
  for (size_t i = 1; i <= specs.size(); ++i) advice.candidates.push_back(result(i));
  std::stable_sort(advice.candidates.begin(), advice.candidates.end(), [](const auto& a, const auto& b) {
    if (a.metrics.oom_at_event.has_value() != b.metrics.oom_at_event.has_value()) return !a.metrics.oom_at_event;
    if (a.metrics.reserved_peak != b.metrics.reserved_peak) return a.metrics.reserved_peak < b.metrics.reserved_peak;
    return device_calls(a.metrics) < device_calls(b.metrics);
  });
  for (size_t i = 0; i < advice.candidates.size() && i < 3; ++i) add_fit(advice.candidates[i]);

  const ReplayMetrics& now = advice.current.metrics;
  for (const auto& c : advice.candidates) {
    if (c.metrics.oom_at_event) continue;
    const bool smaller = c.metrics.reserved_peak < now.reserved_peak - now.reserved_peak / 100;
    const bool same_size_fewer_calls = c.metrics.reserved_peak <= now.reserved_peak + now.reserved_peak / 100 &&
                                       device_calls(c.metrics) * 2 <= device_calls(now);
    if (!smaller && !same_size_fewer_calls) continue;
    advice.items.push_back(
        {(smaller ? "Lower the reserved peak: " : "Fewer device calls: ") + c.paste, c.paste,
         "reserved peak " + format_bytes(now.reserved_peak) + " -> " + format_bytes(c.metrics.reserved_peak) +
             percent_change(now.reserved_peak, c.metrics.reserved_peak) + "; device mallocs + frees " +
             std::to_string(device_calls(now)) + " -> " + std::to_string(device_calls(c.metrics)) + fit_text(c)});
  }

  if (without_empty_cache) {
    const size_t first = specs.size() + 1;
    advice.current_without_empty_cache = result(first);
    const ReplayMetrics& quiet = advice.current_without_empty_cache->metrics;
    // The setting that keeps the reserved peak without the calls: fewest device calls among those at or
    // below today's reserved peak, else the lowest reserved peak.
    std::optional<size_t> best;
    for (size_t i = first; i < lanes.size(); ++i) {
      const ReplayMetrics& m = replays.metrics[i];
      if (m.oom_at_event) continue;
      const bool fits_today = m.reserved_peak <= now.reserved_peak;
      if (!best) {
        best = i;
        continue;
      }
      const ReplayMetrics& b = replays.metrics[*best];
      const bool best_fits = b.reserved_peak <= now.reserved_peak;
      if (fits_today != best_fits
              ? fits_today
              : (fits_today ? device_calls(m) < device_calls(b) : m.reserved_peak < b.reserved_peak))
        best = i;
    }
    std::string evidence =
        std::to_string(advice.empty_cache_calls) + " empty_cache() calls cost " +
        std::to_string(now.device_alloc_calls - std::min(now.device_alloc_calls, quiet.device_alloc_calls)) +
        " extra device mallocs and " +
        std::to_string(now.device_free_calls - std::min(now.device_free_calls, quiet.device_free_calls)) +
        " extra frees (mallocs " + std::to_string(quiet.device_alloc_calls) + " -> " +
        std::to_string(now.device_alloc_calls) + ", frees " + std::to_string(quiet.device_free_calls) + " -> " +
        std::to_string(now.device_free_calls) + ";" + " reserved peak " + format_bytes(quiet.reserved_peak) +
        " without them, " + format_bytes(now.reserved_peak) + " with them).";
    std::string paste;
    if (best) {
      const ReplayMetrics& b = replays.metrics[*best];
      paste = paste_for(lanes[*best].policy);
      evidence += " Without the calls and with " + paste + ": reserved peak " + format_bytes(b.reserved_peak) +
                  ", device mallocs + frees " + std::to_string(device_calls(b)) + ".";
    }
    advice.items.insert(advice.items.begin(),
                        {std::string(advice.empty_cache_calls >= 3 ? "empty_cache() is called in a loop: "
                                                                   : "empty_cache() is called: ") +
                             "drop the calls" + (paste.empty() ? "" : " and set " + paste),
                         paste, evidence});
  }

  if (now.fragmentation_at_peak > 0.10 && now.reserved_peak > 0) {
    const uint64_t gap = static_cast<uint64_t>(now.fragmentation_at_peak * double(now.reserved_peak));
    std::string fix;
    for (const auto& c : advice.candidates)
      if (!c.metrics.oom_at_event && c.metrics.reserved_peak < now.reserved_peak) {
        fix = c.paste;
        break;
      }
    advice.items.push_back(
        {"A large gap between allocated and reserved at the peak" + (fix.empty() ? std::string() : ": try " + fix), fix,
         format_bytes(gap) + " (" + format_percent(now.fragmentation_at_peak) + ") of the " +
             format_bytes(now.reserved_peak) +
             " reserved at the peak is cached but not handed out; the floor (requested peak) is " +
             format_bytes(now.requested_peak) + "."});
  }

  advice.peak = capture_peak_state(
      [&] {
        ReplayOptions o = base;
        o.policy_spec = current_policy;
        o.follow_recorded_placement = now.recorded_placement;  // placed as the replay that found the peak
        return o;
      }(),
      now.reserved_peak);
  return advice;
}

nlohmann::json advice_json(const Advice& a, const std::vector<std::vector<std::string>>& frames) {
  const auto candidate = [&](const CandidateResult& c) {
    nlohmann::json fits = nlohmann::json::object();
    for (uint64_t size : a.gpu_sizes)
      fits[gpu_label(size)] =
          c.fits_above_bytes ? nlohmann::json(*c.fits_above_bytes <= size) : nlohmann::json(nullptr);
    return nlohmann::json{
        {"policy", c.policy},
        {"paste", c.paste},
        {"reserved_peak", c.metrics.reserved_peak},
        {"requested_peak", c.metrics.requested_peak},
        {"device_alloc_calls", c.metrics.device_alloc_calls},
        {"device_free_calls", c.metrics.device_free_calls},
        {"oom", c.metrics.oom_at_event.has_value()},
        {"smallest_fit_bytes", c.smallest_fit_bytes ? nlohmann::json(*c.smallest_fit_bytes) : nullptr},
        {"fits_above_bytes", c.fits_above_bytes ? nlohmann::json(*c.fits_above_bytes) : nullptr},
        {"fits_on_gpu", fits}};
  };
  nlohmann::json items = nlohmann::json::array(), candidates = nlohmann::json::array(),
                 stacks = nlohmann::json::array();
  for (const auto& i : a.items) items.push_back({{"title", i.title}, {"paste", i.paste}, {"evidence", i.evidence}});
  for (const auto& c : a.candidates) candidates.push_back(candidate(c));
  for (size_t i = 0; i < a.peak.top_stacks.size(); ++i)
    stacks.push_back({{"requested_bytes", a.peak.top_stacks[i].bytes},
                      {"blocks", a.peak.top_stacks[i].blocks},
                      {"frames", i < frames.size() ? frames[i] : std::vector<std::string>{}}});
  return {{"schema", "memreplay-advice"},
          {"schema_version", 1},
          {"trace", a.trace},
          {"current", candidate(a.current)},
          {"empty_cache_calls", a.empty_cache_calls},
          {"items", items},
          {"candidates", candidates},
          {"peak_stacks", stacks}};
}

std::string advice_text(const Advice& a, const std::vector<std::vector<std::string>>& frames) {
  std::string out = a.trace + " with " + a.current_policy + ": reserved peak " +
                    format_bytes(a.current.metrics.reserved_peak) + ", requested peak " +
                    format_bytes(a.current.metrics.requested_peak) + ", device mallocs + frees " +
                    std::to_string(device_calls(a.current.metrics)) + fit_text(a.current) + "\n\n";
  if (a.items.empty()) out += "Nothing to change: no candidate setting lowers the reserved peak or the device calls.\n";
  for (size_t i = 0; i < a.items.size(); ++i)
    out += std::to_string(i + 1) + ". " + a.items[i].title + "\n   " + a.items[i].evidence + "\n";
  if (!a.peak.top_stacks.empty()) {
    out += "\nStacks that own the reserved peak (requested bytes live then):\n";
    for (size_t i = 0; i < a.peak.top_stacks.size() && i < 5; ++i) {
      const auto& s = a.peak.top_stacks[i];
      out += "  " + format_bytes(s.bytes) + " in " + std::to_string(s.blocks) + " blocks  " +
             (i < frames.size() && !frames[i].empty() ? frames[i][0] : std::string("(no stack recorded)")) + "\n";
    }
  }
  out += "\nFits on (per-process capacity; the CUDA context takes some more):\n  ";
  char head[64];
  std::snprintf(head, sizeof head, "%-44s", "setting");
  out += head;
  for (uint64_t size : a.gpu_sizes) out += gpu_label(size) + " ";
  out += "\n";
  std::vector<const CandidateResult*> rows = {&a.current};
  for (const auto& c : a.candidates) rows.push_back(&c);
  for (const auto* c : rows) {
    std::snprintf(head, sizeof head, "  %-44s", c->policy.c_str());
    out += head;
    for (uint64_t size : a.gpu_sizes) {
      const std::string cell = !c->fits_above_bytes ? "?" : (*c->fits_above_bytes <= size ? "yes" : "no");
      char buffer[16];
      std::snprintf(buffer, sizeof buffer, "%-*s", static_cast<int>(gpu_label(size).size() + 1), cell.c_str());
      out += buffer;
    }
    out += "\n";
  }
  return out;
}

}  // namespace memreplay::results
