// Verdicts over replays: advise (what to change), check (the CI gate against a baseline and
// limits), the HTML report, the exports, and the stacks live at a replay's reserved peak (what the
// pytest plugin prints when a limit is exceeded).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/output_file.h"
#include "base/text_escape.h"
#include "proto/input_error.h"
#include "python/src/bindings.h"
#include "replayer/replay_runner.h"
#include "results/advice.h"
#include "results/check_metrics.h"
#include "results/check_run.h"
#include "results/memory_viz_export.h"
#include "results/peak_state.h"
#include "results/perfetto_export.h"
#include "results/report_data.h"
#include "results/report_html.h"

namespace memreplay::python {
namespace {

// {'result': what `memreplay advise --json` writes, 'text': what it prints, 'warnings': [...]}
py::dict advise(const ReplayOptions& options, bool with_fit, double max_call_ratio) {
  nlohmann::json document;
  std::string text;
  std::vector<std::string> warnings;
  {
    py::gil_scoped_release release;
    warnings = replay_warnings_before(options);
    const results::Advice advice = results::advise(options, options.policy_spec, with_fit, max_call_ratio);
    for (auto& warning : replay_warnings_after(options, advice.current.metrics)) warnings.push_back(std::move(warning));
    const auto frames = results::stack_lines(options.trace_path, advice.peak.top_stacks);
    document = results::advice_json(advice, frames);
    text = results::advice_text(advice, results::terminal_safe_frames(frames));
  }
  py::dict out;
  out["result"] = to_python(document);
  out["text"] = text;
  out["warnings"] = py::cast(warnings);
  return out;
}

// What `memreplay check` computes and writes (request.outputs), with what it prints: the lines of
// its regressions and of cases new to the baseline, and the torch release's warnings.
py::dict check(const results::CheckRequest& request) {
  nlohmann::json document;
  std::string junit, markdown;
  std::vector<std::string> warnings, regressions;
  bool passed = false;
  size_t failures = 0;
  {
    py::gil_scoped_release release;
    for (const auto& trace : request.traces)
      for (const auto& policy : request.policies)
        if (auto warning = torch_version_warning(trace.path, policy))
          if (std::find(warnings.begin(), warnings.end(), *warning) == warnings.end()) warnings.push_back(*warning);
    const results::CheckResult result = results::run_check(request);
    for (const auto& warning : result.warnings) warnings.push_back(terminal_safe(warning));
    document = results::to_json(result);
    junit = results::junit_xml(result);
    markdown = results::markdown_summary(result);
    passed = result.passed();
    failures = result.failed_cases();
    for (const auto& c : result.cases) {
      if (c.is_new && !c.new_allowed)
        regressions.push_back("NEW " + terminal_safe(c.trace) + " " + terminal_safe(c.policy) +
                              ": no baseline entry (allow_new=True to pass it, update_baseline=True to add it)");
      for (const auto& f : c.findings)
        if (f.regression) regressions.push_back(terminal_safe(results::describe_finding(c, f)));
    }
    if (result.update && result.update->refused)
      regressions.push_back("baseline NOT updated: " + *result.update->refused);
  }
  py::dict out;
  out["result"] = to_python(document);
  out["junit"] = junit;
  out["markdown"] = markdown;
  out["passed"] = passed;
  out["failures"] = failures;
  out["regressions"] = py::cast(regressions);
  out["warnings"] = py::cast(warnings);
  return out;
}

// {'html': the page, 'data': what `memreplay report --json` writes, 'warnings': [...]}
py::dict report(const ReplayOptions& base, std::vector<std::string> policies, double max_call_ratio) {
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
    data = results::build_report_data(base, policies, max_call_ratio);
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

// The state of the replay of `options` at its reserved peak (results::peak_state_json): the stacks
// that own the most requested bytes then, each with its frames ("file:line name", innermost first).
py::object peak_state(const ReplayOptions& options, size_t top) {
  nlohmann::json document;
  {
    py::gil_scoped_release release;
    const ReplayMetrics m = run_replay(options);
    // Placed as the replay that measured the peak.
    const results::PeakState peak = results::capture_peak_state(options, m, top);
    document = results::peak_state_json(peak, results::stack_lines(options.trace_path, peak.top_stacks));
  }
  return to_python(document);
}

// `source` into `path` through an OutputFile, a MiB at a time (a trace may be large).
void copy_to_output_file(const std::string& source, const std::string& path) {
  py::gil_scoped_release release;
  std::ifstream in(source, std::ios::binary);
  if (!in) throw InputError(source + ": cannot read");
  OutputFile out(path);
  std::string buffer(size_t{1} << 20, '\0');
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    out.write(std::string_view(buffer.data(), static_cast<size_t>(in.gcount())));
  }
  if (in.bad()) throw InputError(source + ": cannot read");
  out.commit();
}

}  // namespace

void bind_verdicts(py::module_& m) {
  py::class_<results::TraceInput>(m, "TraceInput", "A trace of a check and its baseline name.")
      .def(py::init<>())
      .def_readwrite("path", &results::TraceInput::path)
      .def_readwrite("name", &results::TraceInput::name);
  py::class_<results::Allowances>(m, "Allowances", "What a check lets pass (results/check.h).")
      .def(py::init<>())
      .def_readwrite("allow_new", &results::Allowances::allow_new)
      .def_readwrite("allow_shrink", &results::Allowances::allow_shrink)
      .def_readwrite("allow_empty", &results::Allowances::allow_empty)
      .def_readwrite("accept", &results::Allowances::accept);
  py::class_<results::CheckOutputs>(m, "CheckOutputs", "The files a check writes.")
      .def(py::init<>())
      .def_readwrite("junit", &results::CheckOutputs::junit)
      .def_readwrite("markdown", &results::CheckOutputs::markdown)
      .def_readwrite("json", &results::CheckOutputs::json);
  py::class_<results::CheckRequest>(m, "CheckRequest", "What one check is asked (results/check_run.h).")
      .def(py::init<>())
      .def_readwrite("traces", &results::CheckRequest::traces)
      .def_readwrite("policies", &results::CheckRequest::policies)
      .def_readwrite("baseline", &results::CheckRequest::baseline)
      .def_readwrite("update_baseline", &results::CheckRequest::update_baseline)
      .def_readwrite("tolerances", &results::CheckRequest::tolerances)
      .def_readwrite("max_reserved", &results::CheckRequest::max_reserved)
      .def_readwrite("max_overhead", &results::CheckRequest::max_overhead)
      .def_readwrite("capacity", &results::CheckRequest::capacity)
      .def_readwrite("allow", &results::CheckRequest::allow)
      .def_readwrite("fit", &results::CheckRequest::fit)
      .def_readwrite("allow_incomplete", &results::CheckRequest::allow_incomplete)
      .def_readwrite("device", &results::CheckRequest::device)
      .def_readwrite("trace_device", &results::CheckRequest::trace_device)
      .def_readwrite("lenient", &results::CheckRequest::lenient)
      .def_readwrite("outputs", &results::CheckRequest::outputs);
  m.def("parse_tolerance", &results::parse_tolerance, py::arg("spec"),
        "('reserved_peak', 0.02) from 'reserved_peak=2%'; InputError for a bad one.");
  m.def(
      "default_tolerances",
      [] {
        std::map<std::string, double> out;
        for (const auto& metric : results::check_metrics()) out[std::string(metric.name)] = metric.default_tolerance;
        return out;
      },
      "Each check metric's default tolerance.");
  m.def("advise", &advise, py::arg("options"), py::arg("fit"), py::arg("max_call_ratio"),
        "{'result': what `memreplay advise --json` writes, 'text': what it prints}.");
  m.def("check", &check, py::arg("request"),
        "{'result': what `memreplay check --json` writes, 'junit', 'markdown', 'passed', 'failures', "
        "'regressions', 'warnings'}; the request's output files written.");
  m.def("report", &report, py::arg("options"), py::arg("policies"), py::arg("max_call_ratio"),
        "{'html': the page, 'data': its data}.");
  m.def("export_memory_viz", &export_memory_viz, py::arg("trace"), py::arg("trace_device"), py::arg("policy"),
        "The trace as a PyTorch memory snapshot pickle, for memory_viz.");
  m.def("export_perfetto", &export_perfetto, py::arg("trace"), py::arg("trace_device"), py::arg("policies"),
        "The trace and its replays as Chrome trace-event JSON, for Perfetto.");
  m.def("refuse_incomplete_trace", &refuse_incomplete_trace, py::arg("trace"), py::arg("allowed"),
        py::arg("consequence"), "InputError for a trace without its footer, unless allowed.");
  m.def(
      "write_output_file",
      [](const std::string& path, const py::bytes& data) {
        std::string bytes = data;
        py::gil_scoped_release release;
        write_output_file(path, bytes);
      },
      py::arg("path"), py::arg("data"),
      "Writes the bytes whole or not at all, as the CLI writes every file (base/output_file.h).");
  m.def("copy_to_output_file", &copy_to_output_file, py::arg("source"), py::arg("path"),
        "Copies the file `source` to `path` as write_output_file writes (whole or not at all).");
  m.def("peak_state", &peak_state, py::arg("options"), py::arg("top"),
        "The replay's state at its reserved peak, with the stacks live then.");
}

}  // namespace memreplay::python
