// What the files of the extension module memreplay._core share. Each file binds one area over the
// libraries the CLI calls (replayer/, results/, recorder/import/) and nothing more: arguments are
// checked and shaped by the Python layer (python/memreplay/_api.py), results go back as the same
// JSON documents the CLI's --json writes, converted to Python objects, never through text.
// Every replay, import and fit runs with the GIL released.
#pragma once

#include <pybind11/pybind11.h>

#include <nlohmann/json_fwd.hpp>

namespace memreplay::python {

namespace py = pybind11;

void bind_errors(py::module_& m);  // errors.cpp
void bind_traces(py::module_& m);  // traces.cpp
void bind_replays(py::module_& m);  // replays.cpp
void bind_verdicts(py::module_& m);  // verdicts.cpp
void bind_sweep(py::module_& m);  // sweep.cpp

// A JSON value as Python objects: dicts, lists, str (invalid UTF-8 replaced), int, float, bool, None.
py::object to_python(const nlohmann::json& value);

}  // namespace memreplay::python
