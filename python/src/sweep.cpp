// One task of a fleet sweep (results/sweep_task.h): what `memreplay sweep` runs per task, for
// memreplay.dask's workers. The line comes back as the text the CLI writes, so a Dask sweep and a
// CLI sweep give the same lines.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "python/src/bindings.h"
#include "results/byte_count.h"
#include "results/sweep_task.h"

namespace memreplay::python {
namespace {

std::string run_sweep_task(const std::string& trace, const std::string& policy, const std::string& capacity,
                           const std::optional<std::string>& name, int grid, const std::string& resolution,
                           bool timeline, bool lenient) {
  results::SweepTask task{trace, name.value_or(trace), policy, results::parse_sweep_capacity(capacity)};
  results::SweepSettings settings;
  settings.fit.grid_points = grid;
  settings.fit.resolution_bytes = results::parse_bytes(resolution, "resolution");
  settings.timeline = timeline;
  settings.lenient = lenient;
  py::gil_scoped_release release;
  return results::run_sweep_task(task, settings);
}

}  // namespace

void bind_sweep(py::module_& m) {
  m.def("run_sweep_task", &run_sweep_task, py::arg("trace"), py::arg("policy"), py::arg("capacity") = "none",
        py::kw_only(), py::arg("name") = py::none(), py::arg("grid") = results::FitSearch{}.grid_points,
        py::arg("resolution") = "1MiB", py::arg("timeline") = false, py::arg("lenient") = false,
        "One sweep task's JSON line, as `memreplay sweep` writes it: capacity none, fit or a size (40GiB). A "
        "trace or policy that cannot be replayed gives an error line, not an exception.");
}

}  // namespace memreplay::python
