// Traces as the Python API holds them: a .mrt file, the user's own or one imported (from a
// snapshot or RMM log file, or from the snapshot dict in memory) into a temporary folder that the
// TraceFile owns and removes with it. And what `memreplay info` says of one.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "proto/framing.h"
#include "proto/input_error.h"
#include "proto/trace_reader.h"
#include "proto/trace_writer.h"
#include "python/src/bindings.h"
#include "python/src/snapshot_dict.h"
#include "recorder/import/import.h"
#include "replayer/retry_reading_sink.h"
#include "replayer/trace_summary.h"

namespace memreplay::python {
namespace {

namespace fs = std::filesystem;

class TraceFile {
 public:
  TraceFile(std::string path, bool owned) : path_(std::move(path)), owned_(owned) {}
  ~TraceFile() {
    if (!owned_) return;
    std::error_code ignored;
    fs::remove_all(fs::path(path_).parent_path(), ignored);
  }
  TraceFile(const TraceFile&) = delete;
  TraceFile& operator=(const TraceFile&) = delete;

  const std::string& path() const { return path_; }
  bool owned() const { return owned_; }

 private:
  std::string path_;
  bool owned_;
};

// A new folder of its own for one imported trace, so that the trace keeps its name (check's
// baselines key traces by file name).
fs::path temporary_folder() {
  std::string pattern = (fs::temp_directory_path() / "memreplay-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr)
    throw InputError(pattern + ": cannot create a temporary folder for the imported trace");
  return pattern;
}

std::string trace_path_in(const fs::path& folder, const std::string& name) {
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
    throw std::invalid_argument("name " + name + ": a trace name is a file name, without '/'");
  return (folder / (name + ".mrt")).string();
}

// Removes the folder unless the import succeeded.
template <typename Import>
std::unique_ptr<TraceFile> import_into_folder(const std::string& name, Import&& import) {
  const fs::path folder = temporary_folder();
  try {
    const std::string path = trace_path_in(folder, name);
    import(path);
    return std::make_unique<TraceFile>(path, true);
  } catch (...) {
    std::error_code ignored;
    fs::remove_all(folder, ignored);
    throw;
  }
}

bool is_trace_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string magic(format::kFileMagic.size(), '\0');
  return in.read(magic.data(), static_cast<std::streamsize>(magic.size())) && magic == format::kFileMagic;
}

std::unique_ptr<TraceFile> open_trace(const std::string& path) {
  {
    py::gil_scoped_release release;
    TraceReader reader(path);  // refuses a damaged file now, not at its first replay
  }
  return std::make_unique<TraceFile>(path, false);
}

// `capacity`: the recorded run's cap, under which open bursts are settled (retry_reading_sink.h).
std::unique_ptr<TraceFile> import_file(const std::string& input, const std::string& name,
                                       std::optional<uint64_t> capacity) {
  return import_into_folder(name, [&](const std::string& path) {
    py::gil_scoped_release release;
    if (!capacity) return (void)import_to_trace_file(input, path);
    TraceWriter writer(path, import_writer_options());
    RetryReadingSink capped(writer, *capacity);
    memreplay::import_file(input, capped);
  });
}

std::unique_ptr<TraceFile> import_dict(py::dict snapshot, const std::string& source, const std::string& name,
                                       std::optional<uint64_t> capacity) {
  return import_into_folder(name, [&](const std::string& path) {
    TraceWriter writer(path, import_writer_options());
    if (!capacity) return import_snapshot_dict(snapshot.ptr(), source, writer);
    RetryReadingSink capped(writer, *capacity);
    import_snapshot_dict(snapshot.ptr(), source, capped);
  });
}

py::object trace_info(const std::string& path) {
  nlohmann::json summary;
  {
    py::gil_scoped_release release;
    TraceReader reader(path);
    summary = trace_summary_json(reader, path);
  }
  return to_python(summary);
}

}  // namespace

void bind_traces(py::module_& m) {
  py::class_<TraceFile>(m, "TraceFile", "A .mrt file; an owned one (imported) is removed with this object.")
      .def_property_readonly("path", &TraceFile::path, "the .mrt file")
      .def_property_readonly("owned", &TraceFile::owned, "whether it is a temporary file removed with this object");
  m.def("is_trace_file", &is_trace_file, py::arg("path"), "Whether the file begins as a .mrt trace does.");
  m.def("open_trace", &open_trace, py::arg("path"), "A .mrt file, its framing checked.");
  m.def("import_file", &import_file, py::arg("input"), py::arg("name"), py::arg("capacity") = py::none(),
        "A snapshot pickle (any compression) or RMM log imported into a temporary NAME.mrt; with `capacity` (the "
        "run's cap, bytes) as `memreplay import --capacity`.");
  m.def("import_dict", &import_dict, py::arg("snapshot"), py::arg("source"), py::arg("name"),
        py::arg("capacity") = py::none(),
        "The dict torch.cuda.memory._snapshot() returns, imported into a temporary NAME.mrt as its pickle "
        "would be; `source` is the header's source_file and names it in errors; `capacity` as for import_file.");
  m.def("trace_info", &trace_info, py::arg("path"), "What `memreplay info --json` says of the trace.");
}

}  // namespace memreplay::python
