// The read side of a pickle Tree (pickle_reader.h): kind names, and the scalars decoded from the
// opcode that pushed them, which the unpickler validated when it parsed them.
#include <algorithm>
#include <charconv>
#include <cstring>

#include "recorder/import/unpickler/pickle_opcodes.h"
#include "recorder/import/unpickler/pickle_reader.h"

namespace memreplay::pickle {

std::string_view kind_name(Kind kind) {
  switch (kind) {
    case Kind::none: return "None";
    case Kind::boolean: return "bool";
    case Kind::integer: return "int";
    case Kind::floating: return "float";
    case Kind::str: return "str";
    case Kind::bytes: return "bytes";
    case Kind::list: return "list";
    case Kind::tuple: return "tuple";
    case Kind::dict: return "dict";
    case Kind::set: return "set";
  }
  return "?";
}

namespace {

// The argument line of the protocol-0 opcode at `offset` (its '\n' was found when parsing).
std::string_view text_argument(std::string_view data, uint64_t offset) {
  const size_t end = data.find('\n', offset + 1);
  return data.substr(offset + 1, end - (offset + 1));
}

int64_t parse_int_text(std::string_view text) {
  if (!text.empty() && text.back() == 'L') text.remove_suffix(1);
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  int64_t v = 0;
  std::from_chars(text.data(), text.data() + text.size(), v);
  return v;
}

}  // namespace

int64_t Tree::scalar_int(uint64_t offset) const {
  const char* p = data_.data() + offset;
  switch (static_cast<uint8_t>(*p)) {
    case NEWTRUE: return 1;
    case NEWFALSE: return 0;
    case BININT1: return static_cast<uint8_t>(p[1]);
    case BININT2: return static_cast<int64_t>(detail::load_le(p + 1, 2));
    case BININT: return static_cast<int32_t>(detail::load_le(p + 1, 4));
    case LONG1:
    case LONG4: {
      const bool long1 = static_cast<uint8_t>(*p) == LONG1;
      const uint64_t n = long1 ? static_cast<uint8_t>(p[1]) : detail::load_le(p + 1, 4);
      const char* bytes = p + (long1 ? 2 : 5);
      if (n == 0) return 0;
      // Longer encodings were checked to hold only sign extension beyond 8 bytes.
      const unsigned used = static_cast<unsigned>(std::min<uint64_t>(n, 8));
      const uint64_t v = detail::load_le(bytes, used);
      const unsigned unused = 64 - 8 * used;
      return static_cast<int64_t>(v << unused) >> unused;
    }
    case INT:
    case LONG: {
      const std::string_view text = text_argument(data_, offset);
      if (text == "01") return 1;
      return parse_int_text(text);
    }
    default: return 0;
  }
}

double Tree::scalar_float(uint64_t offset) const {
  const char* p = data_.data() + offset;
  double d = 0;
  if (static_cast<uint8_t>(*p) == BINFLOAT) {  // big-endian IEEE 754
    uint64_t bits = 0;
    for (int i = 1; i <= 8; ++i) bits = (bits << 8) | static_cast<uint8_t>(p[i]);
    std::memcpy(&d, &bits, sizeof d);
  } else if (static_cast<uint8_t>(*p) == FLOAT) {
    const std::string_view text = text_argument(data_, offset);
    std::from_chars(text.data(), text.data() + text.size(), d);
  }
  return d;
}

std::string_view Tree::scalar_text(uint64_t offset) const {
  const char* p = data_.data() + offset;
  switch (static_cast<uint8_t>(*p)) {
    case SHORT_BINUNICODE:
    case SHORT_BINSTRING:
    case SHORT_BINBYTES: return std::string_view(p + 2, static_cast<uint8_t>(p[1]));
    case BINUNICODE:
    case BINSTRING:
    case BINBYTES: return std::string_view(p + 5, detail::load_le(p + 1, 4));
    case BINUNICODE8:
    case BINBYTES8:
    case BYTEARRAY8: return std::string_view(p + 9, detail::load_le(p + 1, 8));
    default: return {};
  }
}

std::optional<Value> Value::get(std::string_view key) const {
  std::optional<Value> found;
  for (auto [k, v] : pairs())
    if (k.is(Kind::str) && k.as_str() == key) found = v;
  return found;
}

}  // namespace memreplay::pickle
