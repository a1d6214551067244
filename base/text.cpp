// Printable UTF-8 (text.h).
#include "base/text.h"

#include <cstdint>
#include <cstdio>

namespace memreplay {
namespace {

// The length of the valid, printable UTF-8 character at the start of `text`; 0 when it is not one.
size_t printable_character(std::string_view text) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  const uint8_t lead = byte(0);
  if (lead < 0x80) return lead >= 0x20 && lead != 0x7f ? 1 : 0;
  size_t length = 0;
  uint32_t code = 0;
  uint32_t lowest = 0;  // below it, an overlong form
  if ((lead & 0xe0) == 0xc0) {
    length = 2, code = lead & 0x1f, lowest = 0x80;
  } else if ((lead & 0xf0) == 0xe0) {
    length = 3, code = lead & 0x0f, lowest = 0x800;
  } else if ((lead & 0xf8) == 0xf0) {
    length = 4, code = lead & 0x07, lowest = 0x10000;
  } else {
    return 0;
  }
  if (text.size() < length) return 0;
  for (size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xc0) != 0x80) return 0;
    code = (code << 6) | (byte(i) & 0x3f);
  }
  if (code < lowest || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return 0;
  if (code >= 0x80 && code <= 0x9f) return 0;  // C1 controls
  return length;
}

}  // namespace

bool is_printable_utf8(std::string_view text) {
  while (!text.empty()) {
    const size_t length = printable_character(text);
    if (length == 0) return false;
    text.remove_prefix(length);
  }
  return true;
}

std::string escape_unprintable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    size_t length = printable_character(text);
    if (length == 1 && text[0] == '\\') {
      out += "\\\\";
    } else if (length > 0) {
      out.append(text.substr(0, length));
    } else {
      char escape[8];
      std::snprintf(escape, sizeof escape, "\\x%02x", static_cast<unsigned>(static_cast<uint8_t>(text[0])));
      out += escape;
      length = 1;
    }
    text.remove_prefix(length);
  }
  return out;
}

}  // namespace memreplay
