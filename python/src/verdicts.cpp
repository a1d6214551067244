// Verdicts over replays: advise (what to change), check (the CI gate against a baseline and
// limits), the HTML report, the exports, and the stacks live at a replay's reserved peak (what the
// pytest plugin prints when a limit is exceeded).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "python/src/bindings.h"
#include "replayer/replay_runner.h"
#include "results/advice.h"
#include "results/check_run.h"
#include "results/memory_viz_export.h"
#include "results/peak_state.h"
#include "results/perfetto_export.h"
#include "results/report_data.h"
#include "results/report_html.h"

namespace memreplay::python {
namespace {

// {'result': what `memreplay advise --json` writes, 'text': what it prints, 'warnings': [...]}
py::dict advise(const ReplayOptions& options, bool with_fit) {
  nlohmann::json document;
  std::string text;
  std::vector<std::string> warnings;
  {
    py::gil_scoped_release release;
    warnings = replay_warnings_before(options);
    const results::Advice advice = results::advise(options, options.policy_spec, with_fit);
    const auto frames = results::stack_lines(options.trace_path, advice.peak.top_stacks);
    document = results::advice_json(advice, frames);
    text = results::advice_text(advice, frames);
  }
  py::dict out;
  out["result"] = to_python(document);
  out["text"] = text;
  out["warnings"] = py::cast(warnings);
  return out;
}

// The cases as `memreplay check --json` writes them, with the JUnit and Markdown views.
py::dict check(const results::CheckRequest& request) {
  nlohmann::json document;
  std::string junit, markdown;
  std::vector<std::string> warnings;
  size_t failures = 0;
  {
    py::gil_scoped_release release;
    const results::CheckOutcome outcome = results::run_check(request);
    document = results::check_result_json(outcome.cases, outcome.tolerances, outcome.capacity);
    junit = results::junit_xml(outcome.cases, outcome.seconds);
    markdown = results::markdown_summary(outcome.cases);
    failures = outcome.failures();
    warnings = outcome.warnings;
    for (const auto& c : outcome.cases)
      for (const auto& f : c.findings)
        if (f.regression) document["regressions"].push_back(results::describe_finding(c, f));
    if (!document.contains("regressions")) document["regressions"] = nlohmann::json::array();
    document["seconds"] = outcome.seconds;
  }
  py::dict out;
  out["result"] = to_python(document);
  out["junit"] = junit;
  out["markdown"] = markdown;
  out["failures"] = failures;
  out["warnings"] = py::cast(warnings);
  return out;
}

// {'html': the page, 'data': what `memreplay report --json` writes, 'warnings': [...]}
py::dict report(const ReplayOptions& base, std::vector<std::string> policies) {
  if (policies.empty()) policies = results::default_report_policies();
  nlohmann::json data;
  std::string page;
  std::vector<std::string> warnings;
  {
    py::gil_scoped_release release;
    for (const auto& spec : policies) {
      ReplayOptions one = base;
      one.policy_spec = spec;
      for (auto& warning : replay_warnings_before(one))
        if (std::find(warnings.begin(), warnings.end(), warning) == warnings.end()) warnings.push_back(warning);
    }
    data = results::build_report_data(base, policies);
    page = results::render_report_html(data);
  }
  py::dict out;
  out["html"] = page;
  out["data"] = to_python(data);
  out["warnings"] = py::cast(warnings);
  return out;
}

py::dict export_memory_viz(const std::string& trace, uint32_t trace_device, const std::string& policy) {
  results::MemoryVizExport exported;
  {
    py::gil_scoped_release release;
    exported = results::export_memory_viz(trace, trace_device, policy);
  }
  py::dict out;
  out["pickle"] = py::bytes(exported.pickle);
  out["entries"] = exported.entries;
  out["segments"] = exported.segments;
  out["segments_replayed_under"] = exported.segments_replayed_under;
  return out;
}

py::bytes export_perfetto(const std::string& trace, uint32_t trace_device, const std::vector<std::string>& policies) {
  std::string json;
  {
    py::gil_scoped_release release;
    json = results::export_perfetto_replays(trace, trace_device, policies);
  }
  return py::bytes(json);
}

// The state of the replay of `options` at its reserved peak: the stacks that own the most
// requested bytes then, each with its frames ("file:line name", innermost first).
py::dict peak_state(const ReplayOptions& options, size_t top) {
  results::PeakState peak;
  std::vector<std::vector<std::string>> frames;
  {
    py::gil_scoped_release release;
    const ReplayMetrics m = run_replay(options);
    ReplayOptions again = options;
    again.follow_recorded_placement = m.recorded_placement;  // placed as the replay that measured the peak
    peak = results::capture_peak_state(again, m.reserved_peak, top);
    frames = results::stack_lines(options.trace_path, peak.top_stacks);
  }
  py::list stacks;
  for (size_t i = 0; i < peak.top_stacks.size(); ++i) {
    py::dict s;
    s["bytes"] = peak.top_stacks[i].bytes;
    s["blocks"] = peak.top_stacks[i].blocks;
    s["frames"] = py::cast(frames[i]);
    stacks.append(s);
  }
  py::dict out;
  out["found"] = peak.found;
  out["replay_event"] = peak.replay_event;
  out["reserved"] = peak.reserved;
  out["allocated"] = peak.allocated;
  out["requested"] = peak.requested;
  out["top_stacks"] = stacks;
  return out;
}

}  // namespace

void bind_verdicts(py::module_& m) {
  py::class_<results::Limits>(m, "Limits", "Plain limits of a check (results/check.h).")
      .def(py::init<>())
      .def_readwrite("max_reserved", &results::Limits::max_reserved)
      .def_readwrite("max_overhead", &results::Limits::max_overhead);
  py::class_<results::CheckRequest>(m, "CheckRequest", "What one check is asked (results/check_run.h).")
      .def(py::init<>())
      .def_readwrite("traces", &results::CheckRequest::traces)
      .def_readwrite("policies", &results::CheckRequest::policies)
      .def_readwrite("baseline", &results::CheckRequest::baseline)
      .def_readwrite("update_baseline", &results::CheckRequest::update_baseline)
      .def_readwrite("tolerances", &results::CheckRequest::tolerances)
      .def_readwrite("limits", &results::CheckRequest::limits)
      .def_readwrite("capacity", &results::CheckRequest::capacity)
      .def_readwrite("fit", &results::CheckRequest::fit)
      .def_readwrite("allow_incomplete", &results::CheckRequest::allow_incomplete)
      .def_readwrite("device", &results::CheckRequest::device)
      .def_readwrite("trace_device", &results::CheckRequest::trace_device)
      .def_readwrite("lenient", &results::CheckRequest::lenient);
  m.def("parse_tolerances", &results::parse_tolerances, py::arg("specs"),
        "{'reserved_peak': 0.02} from ['reserved_peak=2%']; InputError for a bad one.");
  m.def(
      "default_tolerances",
      [] {
        std::map<std::string, double> out;
        for (const auto& metric : results::check_metrics()) out[std::string(metric.name)] = metric.default_tolerance;
        return out;
      },
      "Each check metric's default tolerance.");
  m.def("advise", &advise, py::arg("options"), py::arg("fit"),
        "{'result': what `memreplay advise --json` writes, 'text': what it prints}.");
  m.def("check", &check, py::arg("request"),
        "{'result': what `memreplay check --json` writes (with 'regressions', 'seconds'), 'junit', 'markdown', "
        "'failures'}.");
  m.def("report", &report, py::arg("options"), py::arg("policies"), "{'html': the page, 'data': its data}.");
  m.def("export_memory_viz", &export_memory_viz, py::arg("trace"), py::arg("trace_device"), py::arg("policy"),
        "The trace as a PyTorch memory snapshot pickle, for memory_viz.");
  m.def("export_perfetto", &export_perfetto, py::arg("trace"), py::arg("trace_device"), py::arg("policies"),
        "The trace and its replays as Chrome trace-event JSON, for Perfetto.");
  m.def("refuse_incomplete_trace", &refuse_incomplete_trace, py::arg("trace"), py::arg("allowed"),
        py::arg("consequence"), "InputError for a trace without its footer, unless allowed.");
  m.def("peak_state", &peak_state, py::arg("options"), py::arg("top"),
        "The replay's state at its reserved peak, with the stacks live then.");
}

}  // namespace memreplay::python
