#include "results/sweep_task.h"

#include <algorithm>
#include <exception>
#include <nlohmann/json.hpp>

#include "proto/input_error.h"
#include "replayer/replay_runner.h"
#include "results/byte_count.h"
#include "results/fit_result.h"
#include "results/fit_scan.h"

namespace memreplay::results {

SweepCapacity parse_sweep_capacity(std::string_view text, std::string* warning) {
  if (text == "none") return {};
  if (text == "fit") return SweepCapacity::fit();
  return SweepCapacity::at(parse_bytes(text, "--capacity", warning));
}

std::vector<SweepCapacity> parse_sweep_capacities(const std::vector<std::string>& lists,
                                                  std::vector<std::string>* warnings) {
  std::vector<SweepCapacity> out;
  for (const auto& list : lists)
    for (size_t start = 0; start <= list.size();) {
      const size_t comma = std::min(list.find(',', start), list.size());
      std::string warning;
      out.push_back(parse_sweep_capacity(std::string_view(list).substr(start, comma - start), &warning));
      if (!warning.empty() && warnings != nullptr) warnings->push_back(warning);
      start = comma + 1;
    }
  if (out.empty()) out.push_back({});
  return out;
}

std::string capacity_key(const SweepCapacity& capacity) {
  switch (capacity.kind) {
    case SweepCapacity::Kind::uncapped: return "none";
    case SweepCapacity::Kind::fit: return "fit";
    case SweepCapacity::Kind::bytes: break;
  }
  return std::to_string(capacity.bytes);
}

nlohmann::json capacity_json(const SweepCapacity& capacity) {
  switch (capacity.kind) {
    case SweepCapacity::Kind::uncapped: return nullptr;
    case SweepCapacity::Kind::fit: return "fit";
    case SweepCapacity::Kind::bytes: break;
  }
  return capacity.bytes;
}

SweepCapacity capacity_from_json(const nlohmann::json& value) {
  if (value.is_null()) return {};
  if (value.is_string() && value.get<std::string>() == "fit") return SweepCapacity::fit();
  if (value.is_number_unsigned() && value.get<uint64_t>() > 0) return SweepCapacity::at(value.get<uint64_t>());
  throw InputError("capacity " + value.dump() + ": expected null, \"fit\" or a byte count");
}

std::string task_key(std::string_view name, std::string_view policy, std::string_view capacity_key) {
  std::string key;
  key.reserve(name.size() + policy.size() + capacity_key.size() + 2);
  key.append(name).append(1, '\t').append(policy).append(1, '\t').append(capacity_key);
  return key;
}

std::string task_key(const SweepTask& task) { return task_key(task.name, task.policy, capacity_key(task.capacity)); }

std::string task_key_of_line(const nlohmann::json& line) {
  if (!line.is_object() || !line.contains("name") || !line["name"].is_string() || !line.contains("policy") ||
      !line["policy"].is_string() || !line.contains("capacity"))
    throw InputError("not a sweep result line (it needs name, policy and capacity)");
  return task_key(line["name"].get<std::string>(), line["policy"].get<std::string>(),
                  capacity_key(capacity_from_json(line["capacity"])));
}

uint64_t stable_hash(std::string_view key, uint64_t seed) {
  uint64_t hash = 14695981039346656037ull ^ (seed * 0x9e3779b97f4a7c15ull);
  for (const unsigned char c : key) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

namespace {

ReplayOptions replay_options(const SweepTask& task, const SweepSettings& settings) {
  ReplayOptions options;
  options.trace_path = task.trace_path;
  options.policy_spec = task.policy;
  options.lenient = settings.lenient;
  if (task.capacity.kind == SweepCapacity::Kind::bytes) options.capacity = task.capacity.bytes;
  return options;
}

nlohmann::json replay_fields(const SweepTask& task, const SweepSettings& settings) {
  const ReplayOptions options = replay_options(task, settings);
  nlohmann::json fields;
  if (task.capacity.kind == SweepCapacity::Kind::fit) {
    const FitScan scan = scan_min_capacity(options, settings.fit);
    fields = to_json(scan.uncapped);
    fields["fit"] = fit_scan_json(options, scan);  // as `fit --json` says it
    fields["fit"].erase("uncapped");  // the line's own fields
  } else {
    fields = to_json(run_replay(options));
  }
  if (!settings.timeline) fields["timeline"] = nlohmann::json::array();
  return fields;
}

// One line that names the trace: InputErrors name it already ("FILE: byte N: ..."), others not.
std::string error_naming_trace(const std::string& trace, const std::string& what) {
  if (what.rfind(trace, 0) == 0) return what;
  return trace + ": " + what;
}

}  // namespace

nlohmann::json sweep_task_result(const SweepTask& task, const SweepSettings& settings) {
  nlohmann::json line;
  std::string error;
  try {
    line = replay_fields(task, settings);
  } catch (const std::exception& e) {
    error = error_naming_trace(task.trace_path, e.what());
  }
  if (!error.empty()) line = {{"error", error}};
  line["name"] = task.name;
  line["trace"] = task.trace_path;
  line["policy"] = task.policy;
  line["capacity"] = capacity_json(task.capacity);
  line["status"] = error.empty() ? "ok" : "error";
  return line;
}

std::string line_text(const nlohmann::json& result) {
  return result.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string run_sweep_task(const SweepTask& task, const SweepSettings& settings) {
  return line_text(sweep_task_result(task, settings));
}

}  // namespace memreplay::results
