// A table of named entries that register themselves from static initialisers: the policies
// (policies/registry.h) and the devices (replayer/device_registry.h). Names are unique: a second
// entry of a name is refused at registration, before anything can pick the wrong one.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/text.h"

namespace memreplay::detail {

class RegistrationError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// "NAME:OPTIONS" -> {NAME, OPTIONS}; OPTIONS is empty without a ':'.
inline std::pair<std::string_view, std::string_view> split_spec(std::string_view spec) {
  const auto colon = spec.find(':');
  if (colon == std::string_view::npos) return {spec, {}};
  return {spec.substr(0, colon), spec.substr(colon + 1)};
}

// Entry has a `std::string name`.
template <class Entry>
class NamedRegistry {
 public:
  explicit NamedRegistry(std::string_view kind) : kind_(kind) {}

  // Throws RegistrationError for a name that is empty, has a ':', a control character or bytes that
  // are not UTF-8, or is registered already.
  bool add(Entry entry) {
    if (entry.name.empty() || entry.name.find(':') != std::string::npos || !is_printable_utf8(entry.name))
      throw RegistrationError("a " + kind_ + " name must be non-empty printable UTF-8 without ':' (got '" +
                              escape_unprintable(entry.name) + "')");
    if (find(entry.name) != nullptr) throw RegistrationError(kind_ + " '" + entry.name + "' is registered twice");
    entries_.push_back(std::move(entry));
    return true;
  }
  const std::vector<Entry>& entries() const { return entries_; }
  const Entry* find(std::string_view name) const {
    for (const Entry& entry : entries_)
      if (entry.name == name) return &entry;
    return nullptr;
  }
  // "a, b, c", for the error that names the valid choices.
  std::string names() const {
    std::string names;
    for (const Entry& entry : entries_) names += (names.empty() ? "" : ", ") + entry.name;
    return names;
  }

 private:
  std::string kind_;
  std::vector<Entry> entries_;
};

}  // namespace memreplay::detail

// Registers an entry from a static initialiser: `registry`::instance().add({fields...}).
#define MEMREPLAY_REGISTER_IN(registry, ident, ...) \
  [[maybe_unused]] static const bool memreplay_registered_##ident = registry::instance().add({__VA_ARGS__})
