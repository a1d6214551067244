// memreplay._core: the extension module (bindings.h says what each file binds).
#include <pybind11/pybind11.h>

#include "proto/version.h"
#include "python/src/bindings.h"

PYBIND11_MODULE(_core, m) {
  m.doc() =
      "memreplay's native half: replays, imports and verdicts over the C++ libraries the memreplay CLI "
      "calls. Use the memreplay package, which wraps these.";
  m.attr("__version__") = std::string(memreplay::kVersion);
  memreplay::python::bind_errors(m);
  memreplay::python::bind_traces(m);
  memreplay::python::bind_replays(m);
  memreplay::python::bind_verdicts(m);
  memreplay::python::bind_sweep(m);
}
