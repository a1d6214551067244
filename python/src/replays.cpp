// Replays: one (memreplay replay), several policies one by one (compare), the smallest capacity
// (fit) and whether one capacity fits, the offline floor (bound); the options they share
// (ReplayOptions), policy specs, plugins and byte counts as the CLI reads them.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "policies/plugin/plugin_loader.h"
#include "policies/registry.h"
#include "python/src/bindings.h"
#include "replayer/bound/offline_bound.h"
#include "replayer/replay_runner.h"
#include "replayer/sim/sim_device.h"
#include "results/byte_count.h"
#include "results/compare.h"
#include "results/fit_result.h"
#include "results/fit_scan.h"
#include "results/policy_list.h"
#include "results/recommendation.h"

namespace memreplay::python {
namespace {

// The warnings of a replay and its document, as the Python layer hands them on (warnings.warn).
py::dict with_warnings(const nlohmann::json& document, const std::vector<std::string>& warnings) {
  py::dict out;
  out["result"] = to_python(document);
  out["warnings"] = py::cast(warnings);
  return out;
}

// Each warning once, as the CLI says them once per command.
void add_once(std::vector<std::string>& warnings, std::string warning) {
  if (std::find(warnings.begin(), warnings.end(), warning) == warnings.end()) warnings.push_back(std::move(warning));
}

std::vector<std::string> warnings_of(const ReplayOptions& options, const ReplayMetrics& m, bool after) {
  std::vector<std::string> warnings = replay_warnings_before(options);
  if (after)
    for (auto& warning : replay_warnings_after(options, m)) warnings.push_back(std::move(warning));
  if (const auto warning = incomplete_warning(options.trace_path, m)) warnings.push_back(*warning);
  return warnings;
}

// A spec the registry refuses is a ValueError before anything is read (PolicySpecError).
void check_policy_spec(const std::string& spec) {
  SimDevice device(SimDevice::Options{});
  PolicyRegistry::instance().create(spec, device);
}

py::dict replay(const ReplayOptions& options) {
  check_policy_spec(options.policy_spec);
  ReplayMetrics m;
  {
    py::gil_scoped_release release;
    m = run_replay(options);
  }
  return with_warnings(to_json(m), warnings_of(options, m, true));
}

// As `memreplay compare`: each spec replayed, then the star (compare_recommendation) over them.
py::dict compare(const ReplayOptions& base, const std::vector<std::string>& policies, double max_call_ratio) {
  const std::vector<std::string> specs = results::compare_policy_specs(policies);
  for (const auto& spec : specs) check_policy_spec(spec);
  std::vector<ReplayMetrics> rows;
  std::vector<std::string> warnings;
  nlohmann::json document;
  {
    py::gil_scoped_release release;
    for (const auto& spec : specs) {
      ReplayOptions one = base;
      one.policy_spec = spec;
      for (auto& w : replay_warnings_before(one)) add_once(warnings, std::move(w));
      rows.push_back(run_replay(one));
      if (rows.size() == 1)
        for (auto& w : replay_warnings_after(one, rows.back())) warnings.push_back(std::move(w));
    }
    if (auto w = incomplete_warning(base.trace_path, rows.front())) warnings.push_back(std::move(*w));
    const results::Recommendation recommendation =
        results::compare_recommendation(base, policies, specs, rows, max_call_ratio);
    document = results::compare_json(base, specs, rows, recommendation);
  }
  return with_warnings(document, warnings);
}

// With a capacity: whether it fits there (and the first failing allocation); without one, the
// capacity scan. As `memreplay fit --json` for one policy.
py::dict fit(const ReplayOptions& options, uint64_t resolution_bytes, int grid) {
  check_policy_spec(options.policy_spec);
  nlohmann::json document;
  std::vector<std::string> warnings = replay_warnings_before(options);
  {
    py::gil_scoped_release release;
    std::optional<std::string> incomplete;
    if (options.capacity) {
      const ReplayMetrics m = run_replay(options);
      incomplete = incomplete_warning(options.trace_path, m);
      document = results::fit_json({results::fit_at_capacity_json(options, m)});
    } else {
      const results::FitScan scan = results::scan_min_capacity(options, {resolution_bytes, grid});
      incomplete = incomplete_warning(options.trace_path, scan.uncapped);
      if (!incomplete) incomplete = skipped_warning(options.trace_path, scan.uncapped);  // one of them, as the CLI
      document = results::fit_json({results::fit_scan_json(options, scan)});
    }
    if (incomplete) warnings.push_back(*incomplete);
  }
  return with_warnings(document, warnings);
}

// Whether the trace replays without running out of memory at options.capacity: one capped
// replay that stops at the first OOM.
bool fits(const ReplayOptions& options) {
  check_policy_spec(options.policy_spec);
  ReplayOptions capped = options;
  capped.continue_after_oom = false;
  py::gil_scoped_release release;
  return !run_replay(capped).oom_at_event;
}

py::object bound(const std::string& trace, uint32_t trace_device) {
  // (without a MiniMalloc CSV: "minimalloc" is null, as in `memreplay bound --json` without --minimalloc)
  nlohmann::json document;
  {
    py::gil_scoped_release release;
    document = to_json(compute_bound(read_lifetimes(trace, trace_device)), trace);
  }
  return to_python(document);
}

// The policies of `memreplay policies --json`, entry for entry.
py::object policies() { return to_python(results::policy_list_json()["policies"]); }

// (bytes, warning or None)
py::tuple parse_bytes(const std::string& text, const std::string& option) {
  std::string warning;
  const uint64_t bytes = results::parse_bytes(text, option, &warning);
  return py::make_tuple(bytes, warning.empty() ? py::object(py::none()) : py::str(warning));
}

}  // namespace

void bind_replays(py::module_& m) {
  py::class_<ReplayOptions>(m, "ReplayOptions", "What one replay is asked to do (replayer/replay_options.h).")
      .def(py::init<>())
      .def_readwrite("trace_path", &ReplayOptions::trace_path)
      .def_readwrite("policy_spec", &ReplayOptions::policy_spec)
      .def_readwrite("device_spec", &ReplayOptions::device_spec)
      .def_readwrite("capacity", &ReplayOptions::capacity)
      .def_readwrite("trace_device", &ReplayOptions::trace_device)
      .def_readwrite("lenient", &ReplayOptions::lenient)
      .def_readwrite("continue_after_oom", &ReplayOptions::continue_after_oom)
      .def_readwrite("timeline_points", &ReplayOptions::timeline_points)
      .def_readwrite("time_operations", &ReplayOptions::time_operations)
      .def_readwrite("from_empty_pool", &ReplayOptions::from_empty_pool);
  m.def(
      "use_recorded_capacity",
      [](ReplayOptions& options) {
        py::gil_scoped_release release;
        return use_recorded_capacity(options);
      },
      py::arg("options"),
      "Without options.capacity: sets it to the cap the trace recorded and returns the line that says so; "
      "else (or none recorded) None.");
  m.def("replay", &replay, py::arg("options"), "{'result': what `memreplay replay --json` writes, 'warnings': [...]}.");
  m.def("compare", &compare, py::arg("options"), py::arg("policies"), py::arg("max_call_ratio"),
        "{'result': what `memreplay compare --json` writes, 'warnings': [...]}.");
  m.def("fit", &fit, py::arg("options"), py::arg("resolution_bytes"), py::arg("grid"),
        "{'result': what `memreplay fit --json` writes for one policy, 'warnings': [...]}.");
  m.attr("DEFAULT_FIT_GRID") = results::FitSearch{}.grid_points;
  m.attr("DEFAULT_MAX_CALL_RATIO") = results::kDefaultMaxCallRatio;
  m.def("fits", &fits, py::arg("options"), "Whether the trace replays without OOM under options.capacity.");
  m.def("bound", &bound, py::arg("trace"), py::arg("trace_device"), "What `memreplay bound --json` writes.");
  m.def("policies", &policies,
        "Every registered policy: name, description, options, reserves_up_front, models_torch_version.");
  m.def("check_policy_spec", &check_policy_spec, py::arg("spec"), "Raises ValueError for a spec the registry refuses.");
  m.def(
      "load_plugin", [](const std::string& path) { return load_policy_plugin(path); }, py::arg("path"),
      "Loads a policy plugin (.so, the C ABI of memreplay_policy_plugin.h); returns its policy's name.");
  m.def(
      "load_environment_plugins", [] { return load_plugins_from_environment(); },
      "Loads the plugins MEMREPLAY_PLUGINS names (A.so:B.so); returns their paths.");
  m.def("parse_bytes", &parse_bytes, py::arg("text"), py::arg("option"),
        "(bytes, warning or None) for '8GiB', '80GB', '1073741824' as the CLI reads them.");
}

}  // namespace memreplay::python
