// Text that comes from outside (a plugin's name, its error messages) before it reaches one line of
// output: whether it is printable UTF-8, and a printable form of any bytes.
#pragma once

#include <string>
#include <string_view>

namespace memreplay {

// Valid UTF-8 (no overlong forms, no surrogates, nothing past U+10FFFF) without control characters
// (U+0000..U+001F, U+007F..U+009F: no newline, no tab, no escape sequence).
bool is_printable_utf8(std::string_view text);

// `text` with every control character and every byte that is not part of valid UTF-8 written as
// \xNN (a backslash too, as \\): always one printable line, and what was printable stays as it was.
std::string escape_unprintable(std::string_view text);

}  // namespace memreplay
