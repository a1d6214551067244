#include "proto/wire_format.h"

namespace memreplay::wire {
namespace {

// Length of the well-formed UTF-8 sequence starting at text[i], or 0 if none does.
size_t utf8_sequence_length(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return i + k < text.size() ? static_cast<uint8_t>(text[i + k]) : 0; };
  const auto follows = [&](size_t k, uint8_t low = 0x80, uint8_t high = 0xbf) {
    return byte(k) >= low && byte(k) <= high;
  };
  const uint8_t lead = byte(0);
  if (lead < 0x80) return 1;
  if (lead >= 0xc2 && lead <= 0xdf) return follows(1) ? 2 : 0;
  if (lead >= 0xe0 && lead <= 0xef)
    return follows(1, lead == 0xe0 ? 0xa0 : 0x80, lead == 0xed ? 0x9f : 0xbf) && follows(2) ? 3 : 0;
  if (lead >= 0xf0 && lead <= 0xf4)
    return follows(1, lead == 0xf0 ? 0x90 : 0x80, lead == 0xf4 ? 0x8f : 0xbf) && follows(2) && follows(3) ? 4 : 0;
  return 0;
}

}  // namespace

std::string valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    if (const size_t length = utf8_sequence_length(text, i)) {
      out.append(text.substr(i, length));
      i += length;
    } else {
      out.append("\xef\xbf\xbd");
      ++i;
    }
  }
  return out;
}

}  // namespace memreplay::wire
