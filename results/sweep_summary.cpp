#include "results/sweep_summary.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "proto/input_error.h"
#include "results/sweep_output.h"
#include "results/sweep_task.h"

namespace memreplay::results {
namespace {

// How sure a fits-on-GPU verdict is: a task at that very capacity beats a fit search, which beats
// the requested peak.
enum class Evidence { none, requested_peak, fit_search, exact };

// What the lines of one (trace, policy) said so far.
struct PolicyLines {
  std::vector<std::string> capacities_seen;  // capacity_key of each task counted
  std::vector<Evidence> evidence;  // per GPU size, behind PolicyVerdict::fits
};

struct TraceLines {
  TraceVerdict verdict;
  std::vector<PolicyLines> policies;  // parallel to verdict.policies
};

uint64_t device_calls(const nlohmann::json& line) {
  return line.at("device_alloc_calls").get<uint64_t>() + line.at("device_free_calls").get<uint64_t>();
}

// A fit search's verdict at `gpu`: sure outside the gap of a non-monotonic scan, and at the
// capacities it tested.
Fits fit_search_verdict(const nlohmann::json& fit, uint64_t gpu) {
  if (gpu >= fit.at("fits_above_bytes").get<uint64_t>()) return Fits::yes;
  if (gpu < fit.at("min_fit_bytes").get<uint64_t>()) return Fits::no;
  for (const auto& probe : fit.at("probes"))
    if (probe.at("capacity").get<uint64_t>() == gpu) return probe.at("fits").get<bool>() ? Fits::yes : Fits::no;
  return Fits::unknown;
}

class SummaryBuilder {
 public:
  explicit SummaryBuilder(const SummaryOptions& options) : options_(options) {}

  void add(const nlohmann::json& line) {
    const std::string name = line.at("name").get<std::string>();
    const std::string policy = line.at("policy").get<std::string>();
    const SweepCapacity capacity = capacity_from_json(line.at("capacity"));
    TraceLines& trace = trace_named(name, line);
    const size_t p = policy_index(trace, policy);
    PolicyLines& seen = trace.policies[p];
    const std::string key = capacity_key(capacity);
    if (std::find(seen.capacities_seen.begin(), seen.capacities_seen.end(), key) != seen.capacities_seen.end()) {
      ++totals_.duplicate_lines;
      return;
    }
    seen.capacities_seen.push_back(key);
    ++totals_.tasks;
    if (line.at("status").get<std::string>() != "ok") return add_error(trace.verdict, line);
    add_result(trace.verdict, trace.verdict.policies[p], seen, capacity, line);
  }

  void count_torn_line() { ++totals_.torn_lines; }

  SweepSummary finish() && {
    SweepSummary summary;
    summary.options = options_;
    summary.totals = std::move(totals_);
    for (auto& trace : traces_) summary.traces.push_back(std::move(trace.verdict));
    for (auto& trace : summary.traces) {
      // The same summary whatever order the lines came in (threads, shards).
      std::sort(trace.policies.begin(), trace.policies.end(),
                [](const PolicyVerdict& a, const PolicyVerdict& b) { return a.policy < b.policy; });
      decide(trace);
    }
    std::sort(summary.traces.begin(), summary.traces.end(), [](const TraceVerdict& a, const TraceVerdict& b) {
      return a.saved_bytes != b.saved_bytes ? a.saved_bytes > b.saved_bytes : a.name < b.name;
    });
    add_up(summary);
    return summary;
  }

 private:
  TraceLines& trace_named(const std::string& name, const nlohmann::json& line) {
    const auto [it, added] = index_.try_emplace(name, traces_.size());
    if (added) {
      traces_.emplace_back();
      traces_.back().verdict.name = name;
      traces_.back().verdict.trace = line.at("trace").get<std::string>();
    }
    return traces_[it->second];
  }

  size_t policy_index(TraceLines& trace, const std::string& policy) {
    auto& policies = trace.verdict.policies;
    for (size_t i = 0; i < policies.size(); ++i)
      if (policies[i].policy == policy) return i;
    const size_t n = options_.gpu_bytes.size();
    policies.push_back({policy, std::nullopt, std::vector<Fits>(n, Fits::unknown)});
    trace.policies.push_back({{}, std::vector<Evidence>(n, Evidence::none)});
    return policies.size() - 1;
  }

  void add_error(TraceVerdict& trace, const nlohmann::json& line) {
    ++totals_.error_tasks;
    // The first error by text, not by arrival: the same summary whatever the order of the lines.
    const std::string error = line.value("error", std::string("(no message)"));
    if (trace.errors++ == 0 || error < trace.first_error) trace.first_error = error;
  }

  void add_result(TraceVerdict& trace, PolicyVerdict& verdict, PolicyLines& seen, const SweepCapacity& capacity,
                  const nlohmann::json& line) {
    trace.requested_peak = std::max(trace.requested_peak, line.at("requested_peak").get<uint64_t>());
    const bool ran_out = !line.at("oom_at_event").is_null();
    if (capacity.kind != SweepCapacity::Kind::bytes && !verdict.uncapped)
      verdict.uncapped = SettingOutcome{line.at("reserved_peak").get<uint64_t>(), device_calls(line), ran_out};
    for (size_t g = 0; g < options_.gpu_bytes.size(); ++g) {
      const uint64_t gpu = options_.gpu_bytes[g];
      if (capacity.kind == SweepCapacity::Kind::bytes && capacity.bytes == gpu)
        learn(verdict, seen, g, ran_out ? Fits::no : Fits::yes, Evidence::exact);
      else if (capacity.kind == SweepCapacity::Kind::fit)
        learn(verdict, seen, g, fit_search_verdict(line.at("fit"), gpu), Evidence::fit_search);
      // Live bytes above the capacity cannot fit in it, whatever the policy.
      if (gpu < line.at("requested_peak").get<uint64_t>()) learn(verdict, seen, g, Fits::no, Evidence::requested_peak);
    }
  }

  static void learn(PolicyVerdict& verdict, PolicyLines& seen, size_t g, Fits fits, Evidence evidence) {
    if (fits == Fits::unknown || evidence <= seen.evidence[g]) return;
    verdict.fits[g] = fits;
    seen.evidence[g] = evidence;
  }

  void decide(TraceVerdict& trace) const {
    std::vector<SettingOutcome> outcomes;
    std::vector<size_t> policy_of;  // outcome index -> policy index
    std::optional<size_t> current;
    for (size_t i = 0; i < trace.policies.size(); ++i) {
      if (!trace.policies[i].uncapped) continue;
      if (trace.policies[i].policy == options_.current_policy) current = outcomes.size();
      outcomes.push_back(*trace.policies[i].uncapped);
      policy_of.push_back(i);
    }
    if (!current) return;
    trace.current = policy_of[*current];
    const auto best = best_setting(outcomes, *current, options_.device_call_factor);
    if (!best) return;
    trace.best = policy_of[*best];
    trace.saved_bytes = outcomes[*current].reserved_peak - outcomes[*best].reserved_peak;
  }

  static void add_up(SweepSummary& summary) {
    FleetTotals& t = summary.totals;
    const size_t n = summary.options.gpu_bytes.size();
    t.traces = summary.traces.size();
    t.fit_current.assign(n, 0), t.fit_best.assign(n, 0), t.unknown_current.assign(n, 0), t.unknown_best.assign(n, 0);
    const auto count = [n](const PolicyVerdict* p, std::vector<uint64_t>& fit, std::vector<uint64_t>& unknown) {
      for (size_t g = 0; g < n; ++g) {
        const Fits f = p ? p->fits[g] : Fits::unknown;
        fit[g] += f == Fits::yes;
        unknown[g] += f == Fits::unknown;
      }
    };
    for (const auto& trace : summary.traces) {
      if (const PolicyVerdict* current = trace.current_policy())
        t.current_reserved_bytes += current->uncapped->reserved_peak;
      t.saved_bytes += trace.saved_bytes;
      t.traces_with_saving += trace.saved_bytes > 0;
      count(trace.current_policy(), t.fit_current, t.unknown_current);
      count(trace.best_policy(), t.fit_best, t.unknown_best);
    }
  }

  SummaryOptions options_;
  std::unordered_map<std::string, size_t> index_;
  std::vector<TraceLines> traces_;
  FleetTotals totals_;
};

}  // namespace

SweepSummary summarize_sweep(const std::vector<std::string>& files, const SummaryOptions& options) {
  SummaryBuilder builder(options);
  for (const auto& file : files)
    if (for_each_result_line(file, [&](const nlohmann::json& line) { builder.add(line); }) > 0)
      builder.count_torn_line();
  return std::move(builder).finish();
}

}  // namespace memreplay::results
