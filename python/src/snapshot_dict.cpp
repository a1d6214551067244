#include "python/src/snapshot_dict.h"

#include <pybind11/pybind11.h>

#include <algorithm>
#include <optional>
#include <span>

#include "recorder/import/pytorch/chunks_ahead.h"
#include "recorder/import/pytorch/pytorch_snapshot_importer.h"
#include "recorder/import/pytorch/snapshot_tree_reader.h"

namespace memreplay::python {

using pickle::Kind;

namespace {

// Objects in memory cost no more to walk than their number: the work budget, which guards against
// a small pickle that expands into a great many objects, has nothing to guard here.
constexpr uint64_t kUnbudgeted = uint64_t{1} << 60;
// Device trace entries handed to the reader at a time (the unpickler hands them over as its
// APPENDS batches come; the reader is indifferent to the size).
constexpr size_t kEntriesPerHandOver = 4096;

[[noreturn]] void refuse(const PyTree& tree, PyObject* object, const std::string& what) {
  throw InputError(tree.source() + ": " + what + " (" + Py_TYPE(object)->tp_name + ")");
}

}  // namespace

Kind PyValue::kind() const {
  PyObject* o = object_;
  // The common kinds first: a snapshot is mostly ints, str, dicts and lists.
  if (PyLong_CheckExact(o)) return Kind::integer;
  if (PyUnicode_CheckExact(o)) return Kind::str;
  if (PyDict_CheckExact(o)) return Kind::dict;
  if (PyList_CheckExact(o)) return Kind::list;
  if (o == Py_None) return Kind::none;
  if (PyBool_Check(o)) return Kind::boolean;
  if (PyFloat_CheckExact(o)) return Kind::floating;
  if (PyTuple_CheckExact(o)) return Kind::tuple;
  if (PyBytes_CheckExact(o) || PyByteArray_CheckExact(o)) return Kind::bytes;
  if (PySet_CheckExact(o) || PyFrozenSet_CheckExact(o)) return Kind::set;
  refuse(*tree_, o, "a value that is not plain data (None, bool, int, float, str, bytes, list, tuple, dict, set)");
}

std::optional<int64_t> PyValue::int_value() const {
  if (!PyLong_CheckExact(object_)) return std::nullopt;
  int overflow = 0;
  const long long n = PyLong_AsLongLongAndOverflow(object_, &overflow);
  if (overflow != 0) refuse(*tree_, object_, "an int beyond 64 bits");
  return static_cast<int64_t>(n);
}

std::string_view PyValue::as_str() const {
  if (PyUnicode_CheckExact(object_)) {
    Py_ssize_t size = 0;
    const char* text = PyUnicode_AsUTF8AndSize(object_, &size);
    if (text == nullptr) {
      PyErr_Clear();
      refuse(*tree_, object_, "a str that is not valid Unicode");
    }
    return {text, static_cast<size_t>(size)};
  }
  if (PyBytes_CheckExact(object_)) return {PyBytes_AS_STRING(object_), static_cast<size_t>(PyBytes_GET_SIZE(object_))};
  if (PyByteArray_CheckExact(object_))
    return {PyByteArray_AS_STRING(object_), static_cast<size_t>(PyByteArray_GET_SIZE(object_))};
  return {};
}

bool PyValue::is_sequence() const {
  return PyList_CheckExact(object_) || PyTuple_CheckExact(object_) || PySet_CheckExact(object_) ||
         PyFrozenSet_CheckExact(object_);
}

uint32_t PyValue::size() const {
  Py_ssize_t n = 0;
  if (PyList_CheckExact(object_))
    n = tree_->streamed(object_) ? 0 : PyList_GET_SIZE(object_);
  else if (PyDict_CheckExact(object_))
    n = PyDict_GET_SIZE(object_);
  else if (PyTuple_CheckExact(object_))
    n = PyTuple_GET_SIZE(object_);
  else if (PySet_CheckExact(object_) || PyFrozenSet_CheckExact(object_))
    n = PySet_GET_SIZE(object_);
  return static_cast<uint32_t>(n);
}

PyValue::Items::Items(PyValue value) : tree_(value.tree_) {
  PyObject* o = value.object_;
  if ((PyList_CheckExact(o) && !tree_->streamed(o)) || PyTuple_CheckExact(o)) {
    begin_ = PySequence_Fast_ITEMS(o);
    end_ = begin_ + PySequence_Fast_GET_SIZE(o);
  } else if (PySet_CheckExact(o) || PyFrozenSet_CheckExact(o)) {
    // The set holds its items: the references iteration hands out can go at once.
    PyObject* iterator = PyObject_GetIter(o);
    if (iterator == nullptr) throw pybind11::error_already_set();
    while (PyObject* item = PyIter_Next(iterator)) {
      set_items_.push_back(item);
      Py_DECREF(item);
    }
    Py_DECREF(iterator);
    begin_ = set_items_.data();
    end_ = begin_ + set_items_.size();
  }
}

std::optional<PyValue> PyValue::get(std::string_view key) const {
  std::optional<PyValue> found;
  for_each_pair([&](PyValue k, PyValue v) {
    if (PyUnicode_CheckExact(k.object_) && k.as_str() == key) found = v;
  });
  return found;
}

InputError snapshot_value_error(const std::string& file, PyValue at, const std::string& what) {
  (void)at;
  return InputError(file + ": " + what);
}

namespace {

// Hands root["device_traces"][k] over to the reader, for each k whose list is a list, before the
// rest of the dict: the order in which the unpickler hands over the lists it streams, which
// decides the order the reader meets streams and stacks in. A list met again is not read again
// (it is empty to the rest of the walk, as a streamed list is in the pickle's tree).
void hand_over_device_traces(PyTree& tree, SnapshotTreeReader<PyValue>& reader) {
  PyObject* root = tree.root().object();
  if (!PyDict_CheckExact(root)) return;
  PyObject* traces = PyDict_GetItemString(root, "device_traces");  // borrowed
  if (traces == nullptr || !PyList_CheckExact(traces)) return;
  std::vector<uint64_t> refs;
  for (Py_ssize_t k = 0; k < PyList_GET_SIZE(traces); ++k) {
    PyObject* list = PyList_GET_ITEM(traces, k);
    if (!PyList_CheckExact(list) || tree.streamed(list)) continue;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i += kEntriesPerHandOver) {
      refs.clear();
      const Py_ssize_t end = std::min<Py_ssize_t>(PyList_GET_SIZE(list), i + kEntriesPerHandOver);
      for (Py_ssize_t j = i; j < end; ++j) refs.push_back(reinterpret_cast<uint64_t>(PyList_GET_ITEM(list, j)));
      reader.take(static_cast<uint32_t>(k), tree, std::span<const uint64_t>(refs));
    }
    tree.mark_streamed(list);
  }
}

}  // namespace

void import_snapshot_dict(PyObject* root, const std::string& source, TraceSink& sink) {
  std::optional<ChunksAhead> ahead;
  if (const auto format = sink.encoded_chunk_format()) ahead.emplace(format->events_per_chunk, format->zstd_level);
  PyTree tree(root, source);
  SnapshotTreeReader<PyValue> reader(source, kUnbudgeted, nullptr, ahead ? &*ahead : nullptr);
  hand_over_device_traces(tree, reader);
  SnapshotContent& content = reader.read(tree);
  pybind11::gil_scoped_release release;
  write_snapshot_content(content, sink, ahead ? &*ahead : nullptr);
}

}  // namespace memreplay::python
