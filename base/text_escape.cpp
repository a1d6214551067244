#include "base/text_escape.h"

namespace memreplay {
namespace {

constexpr char kHex[] = "0123456789abcdef";

void hex_escape(std::string& out, const char* prefix, unsigned value, int digits) {
  out += prefix;
  for (int shift = 4 * (digits - 1); shift >= 0; shift -= 4) out += kHex[(value >> shift) & 0xf];
}

// Appends the escape of control character `c` (below 0x20, or DEL).
void escape_control(std::string& out, unsigned char c) {
  switch (c) {
    case '\n': out += "\\n"; return;
    case '\r': out += "\\r"; return;
    case '\t': out += "\\t"; return;
    case 0x1b: out += "\\e"; return;
    default: hex_escape(out, "\\x", c, 2);
  }
}

bool is_control(unsigned char c) { return c < 0x20 || c == 0x7f; }

// Whether text[at] starts the UTF-8 encoding of a C1 control (U+0080-U+009F: C2 80 - C2 9F).
bool c1_control_at(std::string_view text, size_t at) {
  return static_cast<unsigned char>(text[at]) == 0xc2 && at + 1 < text.size() &&
         static_cast<unsigned char>(text[at + 1]) >= 0x80 && static_cast<unsigned char>(text[at + 1]) <= 0x9f;
}

}  // namespace

std::string terminal_safe(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (is_control(c)) {
      escape_control(out, c);
    } else if (c1_control_at(text, i)) {
      hex_escape(out, "\\u", static_cast<unsigned char>(text[++i]), 4);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::string xml_safe(std::string_view text, bool keep_newlines) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    switch (c) {
      case '&': out += "&amp;"; continue;
      case '<': out += "&lt;"; continue;
      case '>': out += "&gt;"; continue;
      case '"': out += "&quot;"; continue;
      case '\'': out += "&apos;"; continue;
      default: break;
    }
    if (keep_newlines && (c == '\n' || c == '\t')) {
      out += static_cast<char>(c);
    } else if (is_control(c)) {
      escape_control(out, c);
    } else if (c1_control_at(text, i)) {
      hex_escape(out, "\\u", static_cast<unsigned char>(text[++i]), 4);
    } else if (c == 0xef && text.substr(i, 2) == "\xef\xbf" && i + 2 < text.size() &&
               (static_cast<unsigned char>(text[i + 2]) == 0xbe || static_cast<unsigned char>(text[i + 2]) == 0xbf)) {
      out += static_cast<unsigned char>(text[i + 2]) == 0xbe ? "\\ufffe" : "\\uffff";  // not characters in XML
      i += 2;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::string markdown_safe(std::string_view text) {
  const std::string visible = terminal_safe(text);
  std::string out;
  out.reserve(visible.size());
  for (const char c : visible) {
    const auto u = static_cast<unsigned char>(c);
    const bool punctuation =
        (u >= 0x21 && u <= 0x2f) || (u >= 0x3a && u <= 0x40) || (u >= 0x5b && u <= 0x60) || (u >= 0x7b && u <= 0x7e);
    if (punctuation) out += '\\';
    out += c;
  }
  return out;
}

std::string json_for_script(std::string_view json) {
  std::string out;
  out.reserve(json.size() + json.size() / 16);
  for (size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (c == '<') {
      out += "\\u003c";
    } else if (c == '>') {
      out += "\\u003e";
    } else if (c == '&') {
      out += "\\u0026";
    } else if (c == '\xe2' && json.substr(i, 2) == "\xe2\x80" && i + 2 < json.size() &&
               (json[i + 2] == '\xa8' || json[i + 2] == '\xa9')) {
      out += json[i + 2] == '\xa8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace memreplay
