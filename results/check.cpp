#include "results/check.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/units.h"
#include "proto/input_error.h"

namespace memreplay::results {

const std::vector<CheckMetric>& check_metrics() {
  static const std::vector<CheckMetric> metrics = {
      {"reserved_peak", "peak bytes held from the device (cudaMalloc'd + mapped)", false, 0.01},
      {"overhead", "reserved peak ÷ requested peak: the waste over the floor no allocator can beat", false, 0.01},
      {"unallocated_at_peak", "1 - allocated/reserved when reserved peaked: reserved bytes not handed out", true, 0.02},
      {"free_fragmentation_at_peak",
       "1 - largest free range/all free bytes when reserved peaked: how split up the free space is", true, 0.05},
      {"device_calls", "device mallocs + frees (cudaMalloc, cudaFree, map, unmap; pool grows and trims)", false, 0.10},
      {"oom", "1 if an allocation failed (under --capacity), else 0", false, 0.0},
      {"min_fit_bytes", "smallest capacity found to fit (fit's bisection; only with --fit)", false, 0.01},
  };
  return metrics;
}

const CheckMetric& check_metric(std::string_view name) {
  for (const auto& m : check_metrics())
    if (m.name == name) return m;
  std::string valid;
  for (const auto& m : check_metrics()) valid += (valid.empty() ? "" : ", ") + std::string(m.name);
  throw InputError("unknown metric '" + std::string(name) + "' (metrics: " + valid + ")");
}

uint64_t total_device_calls(const ReplayMetrics& m) {
  const auto counter = [&](const char* name) {
    const auto it = m.device_counters.find(name);
    return it == m.device_counters.end() ? uint64_t{0} : it->second;
  };
  return m.device_alloc_calls + m.device_free_calls + counter("pool_grow") + counter("pool_trim");
}

MetricValues metric_values(const ReplayMetrics& m, std::optional<uint64_t> min_fit_bytes) {
  MetricValues v;
  v["reserved_peak"] = static_cast<double>(m.reserved_peak);
  v["overhead"] = m.requested_peak == 0 ? 1.0 : double(m.reserved_peak) / double(m.requested_peak);
  v["unallocated_at_peak"] = m.fragmentation_at_peak;
  v["free_fragmentation_at_peak"] = m.free_fragmentation_at_peak;
  v["device_calls"] = static_cast<double>(total_device_calls(m));
  v["oom"] = m.oom_at_event ? 1.0 : 0.0;
  if (min_fit_bytes) v["min_fit_bytes"] = static_cast<double>(*min_fit_bytes);
  return v;
}

const BaselineEntry* Baseline::find(const std::string& trace, const std::string& policy) const {
  for (const auto& e : entries)
    if (e.trace == trace && e.policy == policy) return &e;
  return nullptr;
}

Baseline load_baseline(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot read the baseline");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError::at_byte(path, e.byte, "not JSON: " + std::string(e.what()));
  }
  const auto bad = [&](const std::string& what) { return InputError(path + ": " + what); };
  if (!j.is_object() || j.value("schema", "") != "memreplay-check-baseline")
    throw bad("not a memreplay check baseline (no \"schema\": \"memreplay-check-baseline\")");
  if (!j.contains("schema_version") || !j["schema_version"].is_number_integer() ||
      j["schema_version"].get<int>() != kBaselineSchemaVersion)
    throw bad("baseline schema version " + (j.contains("schema_version") ? j["schema_version"].dump() : "missing") +
              ", this memreplay reads version " + std::to_string(kBaselineSchemaVersion) +
              " (rewrite it with check --update-baseline)");
  Baseline b;
  try {
    if (j.contains("capacity") && !j["capacity"].is_null()) b.capacity = j["capacity"].get<uint64_t>();
    // A named copy: items() of the temporary j.value() returns would outlive it.
    const nlohmann::json tolerances = j.value("tolerances", nlohmann::json::object());
    for (const auto& [name, value] : tolerances.items()) {
      check_metric(name);
      b.tolerances[name] = value.get<double>();
    }
    for (size_t i = 0; i < j.at("entries").size(); ++i) {
      const auto& e = j["entries"][i];
      BaselineEntry entry{e.at("trace").get<std::string>(), e.at("policy").get<std::string>(), {}};
      for (const auto& [name, value] : e.at("metrics").items()) {
        check_metric(name);
        entry.values[name] = value.get<double>();
      }
      b.entries.push_back(std::move(entry));
    }
  } catch (const nlohmann::json::exception& e) {
    throw bad(std::string("malformed baseline: ") + e.what());
  } catch (const InputError& e) {
    throw bad(e.what());
  }
  return b;
}

void save_baseline(const Baseline& b, const std::string& path) {
  nlohmann::json entries = nlohmann::json::array();
  for (const auto& e : b.entries) entries.push_back({{"trace", e.trace}, {"policy", e.policy}, {"metrics", e.values}});
  const nlohmann::json j = {{"schema", "memreplay-check-baseline"},
                            {"schema_version", kBaselineSchemaVersion},
                            {"capacity", b.capacity ? nlohmann::json(*b.capacity) : nlohmann::json(nullptr)},
                            {"tolerances", b.tolerances},
                            {"entries", entries}};
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary);
    out << j.dump(2) << "\n";
    if (!out) {
      std::error_code ec;
      std::filesystem::remove(temporary, ec);
      throw InputError(path + ": cannot write the baseline");
    }
  }
  std::filesystem::rename(temporary, path);
}

bool CheckCase::failed() const {
  return std::any_of(findings.begin(), findings.end(), [](const Finding& f) { return f.regression; });
}

CheckCase evaluate_case(const std::string& trace, const std::string& policy, const MetricValues& values,
                        const BaselineEntry* entry, const std::map<std::string, double>& tolerances,
                        const Limits& limits) {
  CheckCase c{trace, policy, values, {}};
  if (entry) {
    for (const auto& metric : check_metrics()) {
      const std::string name(metric.name);
      const auto base = entry->values.find(name);
      const auto now = values.find(name);
      if (base == entry->values.end() || now == values.end()) continue;
      const auto t = tolerances.find(name);
      const double tolerance = t != tolerances.end() ? t->second : metric.default_tolerance;
      const double limit = metric.absolute_tolerance ? base->second + tolerance : base->second * (1 + tolerance);
      c.findings.push_back({name, now->second, base->second, limit, now->second > limit + 1e-12, "baseline"});
    }
  }
  const auto add_limit = [&](const std::string& name, double limit, const std::string& option) {
    const double value = values.at(name);
    c.findings.push_back({name, value, std::nullopt, limit, value > limit + 1e-12, option});
  };
  if (limits.max_reserved) add_limit("reserved_peak", double(*limits.max_reserved), "--max-reserved");
  if (limits.max_overhead) add_limit("overhead", *limits.max_overhead, "--max-overhead");
  if (limits.must_fit) add_limit("oom", 0, "--capacity");
  return c;
}

std::string trace_name(const std::string& path) {
  std::filesystem::path p(path);
  return p.extension() == ".mrt" ? p.stem().string() : p.filename().string();
}

std::string format_metric(std::string_view metric, double value) {
  if (metric == "reserved_peak" || metric == "min_fit_bytes") return format_bytes(static_cast<uint64_t>(value));
  if (metric == "overhead") return format_ratio(value);
  if (metric == "unallocated_at_peak" || metric == "free_fragmentation_at_peak") return format_percent(value);
  if (metric == "oom") return value > 0 ? "OOM" : "fits";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.0f", value);
  return buffer;
}

std::string describe_finding(const CheckCase& c, const Finding& f) {
  if (f.metric == "oom")
    return c.trace + " " + c.policy + ": " + (f.value > 0 ? "ran out of memory" : "fits") +
           (f.baseline ? std::string(*f.baseline > 0 ? " (baseline: ran out of memory too)" : " (baseline: fitted)")
                       : " under " + f.source);
  std::string line = c.trace + " " + c.policy + ": " + f.metric + " " + format_metric(f.metric, f.value) +
                     (f.regression ? " > limit " : " <= limit ") + format_metric(f.metric, f.limit);
  if (f.baseline)
    line += " (baseline " + format_metric(f.metric, *f.baseline) + ")";
  else
    line += " (" + f.source + ")";
  return line;
}

nlohmann::json check_result_json(const std::vector<CheckCase>& cases, const std::map<std::string, double>& tolerances,
                                 std::optional<uint64_t> capacity) {
  nlohmann::json out = nlohmann::json::array();
  size_t failed = 0;
  for (const auto& c : cases) {
    nlohmann::json findings = nlohmann::json::array();
    for (const auto& f : c.findings)
      findings.push_back({{"metric", f.metric},
                          {"value", f.value},
                          {"baseline", f.baseline ? nlohmann::json(*f.baseline) : nlohmann::json(nullptr)},
                          {"limit", f.limit},
                          {"source", f.source},
                          {"regression", f.regression}});
    out.push_back({{"trace", c.trace},
                   {"policy", c.policy},
                   {"passed", !c.failed()},
                   {"metrics", c.values},
                   {"findings", findings}});
    failed += c.failed();
  }
  return {{"schema", "memreplay-check-result"},
          {"schema_version", kCheckResultSchemaVersion},
          {"capacity", capacity ? nlohmann::json(*capacity) : nlohmann::json(nullptr)},
          {"tolerances", tolerances},
          {"passed", failed == 0},
          {"failed_cases", failed},
          {"cases", out}};
}

}  // namespace memreplay::results
