#include "recorder/import/unpickler/pickle_text.h"

#include <array>
#include <charconv>
#include <cmath>

namespace memreplay::pickle {

std::string python_float(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  std::array<char, 32> buf{};
  const auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), d);
  std::string s(buf.data(), end);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

template std::string python_text<Value>(Value v);
template std::vector<std::pair<std::string, std::string>> flatten_dict<Value>(Value dict);

}  // namespace memreplay::pickle
