// Replays: one (memreplay replay), several policies one by one (compare), the smallest capacity
// (fit) and whether one capacity fits, the offline floor (bound); the options they share
// (ReplayOptions), policy specs, plugins and byte counts as the CLI reads them.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

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

namespace memreplay::python {
namespace {

// The warnings of a replay and its document, as the Python layer hands them on (warnings.warn).
py::dict with_warnings(const nlohmann::json& document, const std::vector<std::string>& warnings) {
  py::dict out;
  out["result"] = to_python(document);
  out["warnings"] = py::cast(warnings);
  return out;
}

std::vector<std::string> warnings_of(const ReplayOptions& options, const ReplayMetrics& m, bool after) {
  std::vector<std::string> warnings = replay_warnings_before(options);
  if (after)
    if (const auto warning = replay_warning_after(options, m)) warnings.push_back(*warning);
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

py::dict compare(const ReplayOptions& base, const std::vector<std::string>& policies) {
  const std::vector<std::string> specs = results::compare_policy_specs(policies);
  for (const auto& spec : specs) check_policy_spec(spec);
  std::vector<ReplayMetrics> rows;
  std::vector<std::string> warnings;
  {
    py::gil_scoped_release release;
    for (const auto& spec : specs) {
      ReplayOptions one = base;
      one.policy_spec = spec;
      rows.push_back(run_replay(one));
      for (auto& w : warnings_of(one, rows.back(), rows.size() == 1)) warnings.push_back(std::move(w));
    }
  }
  return with_warnings(results::compare_json(base, rows), warnings);
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
      const results::FitScan scan = results::scan_min_capacity(options, resolution_bytes, grid);
      incomplete = incomplete_warning(options.trace_path, scan.uncapped);
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
  nlohmann::json document;
  {
    py::gil_scoped_release release;
    document = to_json(compute_bound(read_lifetimes(trace, trace_device)), trace);
  }
  return to_python(document);
}

py::list policies() {
  py::list out;
  for (const PolicyInfo& info : PolicyRegistry::instance().policies()) {
    py::dict entry;
    entry["name"] = info.name;
    entry["description"] = info.description;
    entry["options"] = info.options_help;
    out.append(entry);
  }
  return out;
}

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
  m.def("replay", &replay, py::arg("options"), "{'result': what `memreplay replay --json` writes, 'warnings': [...]}.");
  m.def("compare", &compare, py::arg("options"), py::arg("policies"),
        "{'result': what `memreplay compare --json` writes, 'warnings': [...]}.");
  m.def("fit", &fit, py::arg("options"), py::arg("resolution_bytes"), py::arg("grid"),
        "{'result': what `memreplay fit --json` writes for one policy, 'warnings': [...]}.");
  m.def("fits", &fits, py::arg("options"), "Whether the trace replays without OOM under options.capacity.");
  m.def("bound", &bound, py::arg("trace"), py::arg("trace_device"), "What `memreplay bound --json` writes.");
  m.def("policies", &policies, "Every registered policy: name, description, options.");
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
