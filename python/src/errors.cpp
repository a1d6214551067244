// C++ errors as Python exceptions: InputError (bad input: the file, byte offset and event index as
// attributes), PolicySpecError as ValueError, PluginError as InputError naming the plugin. JSON
// documents as Python objects.
#include <nlohmann/json.hpp>

#include "policies/plugin/plugin_loader.h"
#include "policies/registry.h"
#include "proto/input_error.h"
#include "python/src/bindings.h"

namespace memreplay::python {
namespace {

py::object optional_int(std::optional<uint64_t> value) {
  if (!value) return py::none();
  return py::int_(*value);
}

void raise_input_error(PyObject* type, const InputError& e) {
  py::object error = py::reinterpret_borrow<py::object>(type)(py::str(e.what()));
  error.attr("file") = e.file().empty() ? py::object(py::none()) : py::str(e.file());
  error.attr("offset") = optional_int(e.byte_offset());
  error.attr("event") = optional_int(e.event_index());
  PyErr_SetObject(type, error.ptr());
}

}  // namespace

void bind_errors(py::module_& m) {
  // Never destroyed: a type the translator below may use until the interpreter is gone.
  static auto* input_error = new py::exception<InputError>(m, "InputError", PyExc_ValueError);
  input_error->attr("__doc__") =
      "Bad input: a damaged or truncated trace or snapshot, a value a snapshot cannot hold, an unusable "
      "plugin. str() is one line naming the file and where in it; the attributes say the same apart: file "
      "(str or None), offset (byte offset or None), event (event index or None).";
  input_error->attr("file") = py::none();
  input_error->attr("offset") = py::none();
  input_error->attr("event") = py::none();
  py::register_exception_translator([](std::exception_ptr thrown) {
    try {
      if (thrown) std::rethrow_exception(thrown);
    } catch (const InputError& e) {
      raise_input_error(input_error->ptr(), e);
    } catch (const PolicySpecError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const PluginError& e) {
      raise_input_error(input_error->ptr(), InputError(e.what()));
    }
  });
}

py::object to_python(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::null: return py::none();
    case nlohmann::json::value_t::boolean: return py::bool_(value.get<bool>());
    case nlohmann::json::value_t::number_unsigned: return py::int_(value.get<uint64_t>());
    case nlohmann::json::value_t::number_integer: return py::int_(value.get<int64_t>());
    case nlohmann::json::value_t::number_float: return py::float_(value.get<double>());
    case nlohmann::json::value_t::string: {
      const auto& text = value.get_ref<const std::string&>();
      return py::reinterpret_steal<py::object>(
          PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()), "replace"));
    }
    case nlohmann::json::value_t::array: {
      py::list out(value.size());
      size_t i = 0;
      for (const auto& item : value) out[i++] = to_python(item);
      return out;
    }
    case nlohmann::json::value_t::object: {
      py::dict out;
      for (const auto& [key, item] : value.items()) out[py::str(key)] = to_python(item);
      return out;
    }
    case nlohmann::json::value_t::binary:
    case nlohmann::json::value_t::discarded: break;
  }
  return py::none();
}

}  // namespace memreplay::python
