// Unpickled values as text, the way Python would print them: what annotation metadata and
// allocator settings become in a trace header (which holds strings only). Templates over the value
// type, so that a snapshot read from Python objects in memory (snapshot_tree_reader.h) prints its
// values as the pickle of those objects would; pickle::Value's are instantiated in pickle_text.cpp.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "recorder/import/unpickler/pickle_reader.h"

namespace memreplay::pickle {

namespace text_limits {
inline constexpr int kMaxDepth = 8;
inline constexpr size_t kMaxTextBytes = 4096;
inline constexpr size_t kMaxPairs = 4096;
inline constexpr size_t kMaxKeyBytes = 256;  // per nesting level of a flattened key
}  // namespace text_limits

// Python's repr() of a float: shortest round-trip digits, always with a '.' or an exponent.
std::string python_float(double d);

// Appends the text of `v` to `out`; stops adding once `out` is past the limit, so even a list
// that contains itself a thousand times costs only a bounded walk.
template <class V>
void append_python_text(V v, int depth, std::string& out) {
  using namespace text_limits;
  if (out.size() > kMaxTextBytes) return;
  switch (v.kind()) {
    case Kind::none: out += "None"; return;
    case Kind::boolean: out += v.as_bool() ? "True" : "False"; return;
    case Kind::integer: out += std::to_string(v.as_int()); return;
    case Kind::floating: out += python_float(v.as_float()); return;
    case Kind::str:
    case Kind::bytes: out += v.as_str().substr(0, kMaxTextBytes); return;
    case Kind::list:
    case Kind::tuple:
    case Kind::set:
    case Kind::dict: {
      if (depth >= kMaxDepth) {
        out += "...";
        return;
      }
      const bool dict = v.is(Kind::dict);
      out += dict ? '{' : '[';
      bool first = true;
      auto separator = [&] {
        if (!first) out += ',';
        first = false;
      };
      // Loops that stop at the limit: a list aliased into itself must not be walked whole at
      // every level once the text is full.
      if (dict) {
        for (auto [k, item] : v.pairs()) {
          if (out.size() > kMaxTextBytes) break;
          separator();
          append_python_text(k, depth + 1, out);
          out += ':';
          append_python_text(item, depth + 1, out);
        }
      } else {
        for (V item : v.items()) {
          if (out.size() > kMaxTextBytes) break;
          separator();
          append_python_text(item, depth + 1, out);
        }
      }
      out += dict ? '}' : ']';
      return;
    }
  }
}

// str/bytes as they are; None/True/False as in Python; ints in decimal; floats as Python's
// repr() ("0.0", "1e+16"); containers as [a,b] and {k:v}. Output is cut at 4 KiB and nesting
// at 8 levels: a hostile pickle can alias one list into itself over and over.
template <class V>
std::string python_text(V v) {
  std::string out;
  append_python_text(v, 0, out);
  if (out.size() > text_limits::kMaxTextBytes) out.resize(text_limits::kMaxTextBytes);
  return out;
}

template <class V>
void flatten_into(V v, const std::string& prefix, int depth, std::vector<std::pair<std::string, std::string>>& out) {
  using namespace text_limits;
  if (out.size() >= kMaxPairs) return;
  if (v.is(Kind::dict) && depth < kMaxDepth) {
    for (auto [k, item] : v.pairs()) {
      if (out.size() >= kMaxPairs) return;
      const std::string key = python_text(k).substr(0, kMaxKeyBytes);
      flatten_into(item, prefix.empty() ? key : prefix + "." + key, depth + 1, out);
    }
    return;
  }
  out.emplace_back(prefix, python_text(v));
}

// A dict flattened to (key, text) pairs, nested dict keys joined with '.':
// {"a": 1, "b": {"1": 0, "2": 4}} → ("a", "1"), ("b.1", "0"), ("b.2", "4"). At most 4096 pairs,
// 8 levels, 256 bytes of key per level and 4 KiB of text per value: at most ~24 MiB whatever
// aliasing the dict holds.
template <class V>
std::vector<std::pair<std::string, std::string>> flatten_dict(V dict) {
  std::vector<std::pair<std::string, std::string>> out;
  if (dict.is(Kind::dict)) flatten_into(dict, "", 0, out);
  return out;
}

extern template std::string python_text<Value>(Value v);
extern template std::vector<std::pair<std::string, std::string>> flatten_dict<Value>(Value dict);

}  // namespace memreplay::pickle
