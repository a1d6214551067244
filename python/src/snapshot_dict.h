// The dict torch.cuda.memory._snapshot() returns, read where it lies: its Python objects walked
// by the importer's own reader (SnapshotTreeReader, recorder/import/pytorch/snapshot_tree_reader.h)
// through PyValue, which answers as pickle::Value answers for the pickle of the same objects,
// then the importer's output stage. The trace is byte for byte the one its pickle imports to.
//
// The walk needs the GIL (it reads Python objects; nothing else can change them meanwhile); the
// output stage, most of the work, runs without it.
#pragma once

#include <Python.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "proto/input_error.h"
#include "proto/trace_sink.h"
#include "recorder/import/unpickler/pickle_reader.h"

namespace memreplay::python {

class PyValue;

// The objects of one snapshot: the root and the device trace lists handed over to the reader
// before the rest (which read as empty from then on, as the unpickler leaves the lists it streams).
class PyTree {
 public:
  PyTree(PyObject* root, std::string source) : root_(root), source_(std::move(source)) {}
  PyValue root() const;
  const std::string& source() const { return source_; }
  bool streamed(PyObject* list) const { return streamed_.contains(list); }
  void mark_streamed(PyObject* list) { streamed_.insert(list); }

 private:
  PyObject* root_;
  std::string source_;
  std::unordered_set<PyObject*> streamed_;
};

// One Python object of a snapshot, with pickle::Value's interface (snapshot_tree_reader.h). Only
// plain data is read: an object of another type (what the pickle would need code to rebuild) is
// an InputError, as are ints beyond 64 bits and str that UTF-8 cannot hold, which the unpickler
// refuses too.
class PyValue {
 public:
  using TreeType = PyTree;
  using RefType = uint64_t;  // the object's address

  PyValue() = default;
  PyValue(const PyTree* tree, RefType ref) : tree_(tree), object_(reinterpret_cast<PyObject*>(ref)) {}
  PyValue(const PyTree* tree, PyObject* object) : tree_(tree), object_(object) {}

  pickle::Kind kind() const;
  bool is(pickle::Kind k) const { return kind() == k; }
  RefType id() const { return reinterpret_cast<RefType>(object_); }
  PyObject* object() const { return object_; }
  const PyTree& tree() const { return *tree_; }

  bool as_bool() const { return object_ == Py_True; }
  std::optional<int64_t> int_value() const;
  int64_t as_int() const { return int_value().value_or(0); }
  double as_float() const { return PyFloat_CheckExact(object_) ? PyFloat_AS_DOUBLE(object_) : 0; }
  std::string_view as_str() const;

  bool is_sequence() const;
  uint32_t size() const;

  class Items;
  class Pairs;
  Items items() const;
  Pairs pairs() const;
  std::optional<PyValue> get(std::string_view key) const;

  // Python dicts share no key lists the reader could use (pickle::Value::shape_id).
  uint32_t shape_id() const { return 0; }
  const RefType* shaped_values() const { return nullptr; }

  template <typename F>
  void for_each_pair(F&& f) const;
  template <typename F>
  void for_each_item(F&& f) const;

 private:
  const PyTree* tree_ = nullptr;
  PyObject* object_ = nullptr;
};

// The items of a list or tuple (borrowed from it) or of a set (collected in iteration order, as
// the pickler writes them); nothing for other values and for lists already streamed.
class PyValue::Items {
 public:
  class iterator {
   public:
    iterator(const PyTree* tree, PyObject* const* p) : tree_(tree), p_(p) {}
    PyValue operator*() const { return PyValue(tree_, *p_); }
    iterator& operator++() {
      ++p_;
      return *this;
    }
    bool operator!=(const iterator& other) const { return p_ != other.p_; }

   private:
    const PyTree* tree_;
    PyObject* const* p_;
  };
  explicit Items(PyValue value);
  Items(Items&&) = default;
  Items(const Items&) = delete;
  iterator begin() const { return iterator(tree_, begin_); }
  iterator end() const { return iterator(tree_, end_); }

 private:
  const PyTree* tree_;
  std::vector<PyObject*> set_items_;
  PyObject* const* begin_ = nullptr;
  PyObject* const* end_ = nullptr;
};

// A dict's (key, value) pairs in its order; nothing for other values.
class PyValue::Pairs {
 public:
  class iterator {
   public:
    iterator(const PyTree* tree, PyObject* dict) : tree_(tree), dict_(dict) { ++*this; }
    iterator() = default;
    std::pair<PyValue, PyValue> operator*() const { return {PyValue(tree_, key_), PyValue(tree_, value_)}; }
    iterator& operator++() {
      if (dict_ != nullptr && !PyDict_Next(dict_, &position_, &key_, &value_)) dict_ = nullptr;
      return *this;
    }
    bool operator!=(const iterator& other) const { return dict_ != other.dict_; }

   private:
    const PyTree* tree_ = nullptr;
    PyObject* dict_ = nullptr;  // null at the end
    Py_ssize_t position_ = 0;
    PyObject* key_ = nullptr;
    PyObject* value_ = nullptr;
  };
  Pairs(const PyTree* tree, PyObject* dict) : tree_(tree), dict_(dict) {}
  iterator begin() const { return dict_ != nullptr ? iterator(tree_, dict_) : iterator(); }
  iterator end() const { return iterator(); }

 private:
  const PyTree* tree_;
  PyObject* dict_;
};

inline PyValue PyTree::root() const { return PyValue(this, root_); }

inline PyValue::Items PyValue::items() const { return Items(*this); }
inline PyValue::Pairs PyValue::pairs() const {
  return Pairs(tree_, object_ != nullptr && PyDict_CheckExact(object_) ? object_ : nullptr);
}

template <typename F>
void PyValue::for_each_pair(F&& f) const {
  if (object_ == nullptr || !PyDict_CheckExact(object_)) return;
  Py_ssize_t position = 0;
  PyObject *key, *value;
  while (PyDict_Next(object_, &position, &key, &value)) f(PyValue(tree_, key), PyValue(tree_, value));
}

template <typename F>
void PyValue::for_each_item(F&& f) const {
  for (PyValue item : items()) f(item);
}

// The error for a bad value: the snapshot's name (its source) and what is wrong, with where in the
// snapshot ("segments[3].blocks[0]: ...") as the reader says it; there is no byte offset.
InputError snapshot_value_error(const std::string& file, PyValue at, const std::string& what);

// Imports the snapshot dict `root` into `sink` (begin to finish), `source` naming it in the header
// (source_file) and in errors. Call with the GIL held; it is released for the output stage.
void import_snapshot_dict(PyObject* root, const std::string& source, TraceSink& sink);

}  // namespace memreplay::python
