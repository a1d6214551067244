#include "results/baseline.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "proto/input_error.h"
#include "proto/schema_versions.h"
#include "results/bounded_json.h"

namespace memreplay::results {
namespace {

constexpr const char* kSchema = "memreplay-check-baseline";

// The checks of one document, each failure an InputError naming the file and the field.
class BaselineParser {
 public:
  explicit BaselineParser(const std::string& path) : path_(path) {}

  Baseline parse(const nlohmann::json& j) {
    if (!j.is_object() || !j.contains("schema") || !j["schema"].is_string() || j["schema"] != kSchema)
      fail("", std::string("not a memreplay check baseline (no \"schema\": \"") + kSchema + "\")");
    only_keys(j, "", {"schema", "schema_version", "capacity", "tolerances", "entries"});
    check_version(j);
    Baseline b;
    if (j.contains("capacity") && !j["capacity"].is_null()) {
      const auto& c = j["capacity"];
      if (!c.is_number_unsigned() || c.get<uint64_t>() == 0) fail("capacity", "expected null or bytes (> 0)");
      b.capacity = c.get<uint64_t>();
    }
    if (j.contains("tolerances")) {
      const auto& t = object_at(j["tolerances"], "tolerances");
      for (const auto& [name, value] : t.items()) {
        metric_named(name, "tolerances");
        const std::string where = "tolerances." + name;
        const double number = number_at(value, where);
        if (const auto problem = tolerance_problem(number)) fail(where, *problem);
        b.tolerances[name] = number;
      }
    }
    if (!j.contains("entries") || !j["entries"].is_array()) fail("entries", "expected an array of entries");
    std::set<std::pair<std::string, std::string>> seen;
    for (size_t i = 0; i < j["entries"].size(); ++i) {
      BaselineEntry entry = parse_entry(j["entries"][i], "entries[" + std::to_string(i) + "]");
      if (!seen.emplace(entry.trace, entry.policy).second)
        fail("entries[" + std::to_string(i) + "]",
             "a second entry for trace " + in_quotes(entry.trace) + " with policy " + in_quotes(entry.policy));
      b.entries.push_back(std::move(entry));
    }
    return b;
  }

 private:
  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw InputError(path_ + ": " + (where.empty() ? "" : where + ": ") + what);
  }

  void check_version(const nlohmann::json& j) const {
    const auto shown = [&] { return j.contains("schema_version") ? j["schema_version"].dump() : "missing"; };
    bool readable = false;
    if (j.contains("schema_version")) {
      const auto& v = j["schema_version"];
      // Read exactly: 4294967297 is not 1, nor is 1.0 an integer.
      if (v.is_number_unsigned())
        readable =
            v.get<uint64_t>() >= uint64_t(schema::kOldestBaseline) && v.get<uint64_t>() <= uint64_t(schema::kBaseline);
      else if (v.is_number_integer())
        readable = v.get<int64_t>() >= schema::kOldestBaseline && v.get<int64_t>() <= schema::kBaseline;
    }
    if (!readable)
      fail("", "baseline schema version " + shown().substr(0, 40) + ", this memreplay reads versions " +
                   std::to_string(schema::kOldestBaseline) + " to " + std::to_string(schema::kBaseline) +
                   " (write a new one with check --update-baseline)");
  }

  void only_keys(const nlohmann::json& j, const std::string& where, std::initializer_list<const char*> keys) const {
    for (const auto& item : j.items()) {
      const std::string& key = item.key();
      if (std::none_of(keys.begin(), keys.end(), [&](const char* k) { return key == k; })) {
        std::string valid;
        for (const char* k : keys) valid += (valid.empty() ? "" : ", ") + std::string(k);
        fail(where, "unknown field " + in_quotes(key) + " (fields: " + valid + ")");
      }
    }
  }

  const nlohmann::json& object_at(const nlohmann::json& j, const std::string& where) const {
    if (!j.is_object()) fail(where, "expected an object");
    return j;
  }

  double number_at(const nlohmann::json& j, const std::string& where) const {
    if (!j.is_number()) fail(where, "expected a number, got " + std::string(j.type_name()));
    const double value = j.get<double>();
    if (!std::isfinite(value)) fail(where, "not a finite number");
    return value;
  }

  std::string name_at(const nlohmann::json& entry, const char* key, const std::string& where) const {
    const std::string at = where + "." + key;
    if (!entry.contains(key) || !entry[key].is_string()) fail(at, "expected a string");
    const std::string name = entry[key].get<std::string>();
    if (const auto problem = name_problem(name)) fail(at, "the name " + in_quotes(name) + " " + *problem);
    return name;
  }

  void metric_named(const std::string& name, const std::string& where) const {
    try {
      check_metric(name);
    } catch (const InputError& e) {
      fail(where, e.what());
    }
  }

  BaselineEntry parse_entry(const nlohmann::json& e, const std::string& where) const {
    object_at(e, where);
    only_keys(e, where, {"trace", "policy", "metrics"});
    BaselineEntry entry{name_at(e, "trace", where), name_at(e, "policy", where), {}};
    if (!e.contains("metrics")) fail(where + ".metrics", "missing");
    for (const auto& [name, value] : object_at(e["metrics"], where + ".metrics").items()) {
      metric_named(name, where + ".metrics");
      const std::string at = where + ".metrics." + name;
      const double number = number_at(value, at);
      if (number < 0) fail(at, "negative");
      if (name == "oom" && number != 0 && number != 1) fail(at, "expected 0 (fits) or 1 (ran out of memory)");
      entry.values[name] = number;
    }
    return entry;
  }

  const std::string& path_;
};

}  // namespace

const BaselineEntry* Baseline::find(const std::string& trace, const std::string& policy) const {
  for (const auto& e : entries)
    if (e.trace == trace && e.policy == policy) return &e;
  return nullptr;
}

void Baseline::put(const BaselineEntry& entry) {
  for (auto& e : entries)
    if (e.trace == entry.trace && e.policy == entry.policy) {
      e = entry;
      return;
    }
  entries.push_back(entry);
}

std::optional<std::string> tolerance_problem(double value) {
  if (!std::isfinite(value)) return "a tolerance must be a finite number";
  if (value < 0) return "a tolerance cannot be negative";
  return std::nullopt;
}

Baseline baseline_from_json(const nlohmann::json& document, const std::string& path) {
  return BaselineParser(path).parse(document);
}

Baseline parse_baseline(std::string_view text, const std::string& path) {
  return baseline_from_json(parse_bounded_json(text, path, {kMaxBaselineBytes, kMaxBaselineDepth}), path);
}

Baseline load_baseline(const std::string& path) {
  return baseline_from_json(read_bounded_json(path, {kMaxBaselineBytes, kMaxBaselineDepth}), path);
}

nlohmann::json to_json(const Baseline& b) {
  nlohmann::json entries = nlohmann::json::array();
  for (const auto& e : b.entries) entries.push_back({{"trace", e.trace}, {"policy", e.policy}, {"metrics", e.values}});
  return {{"schema", kSchema},
          {"schema_version", schema::kBaseline},
          {"capacity", b.capacity ? nlohmann::json(*b.capacity) : nlohmann::json(nullptr)},
          {"tolerances", b.tolerances},
          {"entries", entries}};
}

std::string baseline_text(const Baseline& b) { return to_json(b).dump(2) + "\n"; }

}  // namespace memreplay::results
