#include "recorder/import/unpickler/pickle_text.h"

#include <array>
#include <charconv>
#include <cmath>

namespace memreplay::pickle {
namespace {

constexpr int kMaxDepth = 8;
constexpr size_t kMaxTextBytes = 4096;
constexpr size_t kMaxPairs = 4096;
constexpr size_t kMaxKeyBytes = 256;  // per nesting level of a flattened key

// Python's repr() of a float: shortest round-trip digits, always with a '.' or an exponent.
std::string python_float(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  std::array<char, 32> buf{};
  const auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), d);
  std::string s(buf.data(), end);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

// Appends the text of `v` to `out`; stops adding once `out` is past the limit, so even a list
// that contains itself a thousand times costs only a bounded walk.
void append_text(Value v, int depth, std::string& out) {
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
          append_text(k, depth + 1, out);
          out += ':';
          append_text(item, depth + 1, out);
        }
      } else {
        for (Value item : v.items()) {
          if (out.size() > kMaxTextBytes) break;
          separator();
          append_text(item, depth + 1, out);
        }
      }
      out += dict ? '}' : ']';
      return;
    }
  }
}

void flatten(Value v, const std::string& prefix, int depth, std::vector<std::pair<std::string, std::string>>& out) {
  if (out.size() >= kMaxPairs) return;
  if (v.is(Kind::dict) && depth < kMaxDepth) {
    for (auto [k, item] : v.pairs()) {
      if (out.size() >= kMaxPairs) return;
      const std::string key = python_text(k).substr(0, kMaxKeyBytes);
      flatten(item, prefix.empty() ? key : prefix + "." + key, depth + 1, out);
    }
    return;
  }
  out.emplace_back(prefix, python_text(v));
}

}  // namespace

std::string python_text(Value v) {
  std::string out;
  append_text(v, 0, out);
  if (out.size() > kMaxTextBytes) out.resize(kMaxTextBytes);
  return out;
}

std::vector<std::pair<std::string, std::string>> flatten_dict(Value dict) {
  std::vector<std::pair<std::string, std::string>> out;
  if (dict.is(Kind::dict)) flatten(dict, "", 0, out);
  return out;
}

}  // namespace memreplay::pickle
