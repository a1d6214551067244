// Text from a trace (stack frame names, file names, header fields, trace names) reaching a sink
// that gives some characters a meaning: a terminal (escape sequences: a frame name could clear
// the screen or print a forged "memreplay: all good" line), XML, Markdown, a <script> element.
// Each function makes the text inert for its sink and keeps everything else as it is; each is
// linear in the text.
#pragma once

#include <string>
#include <string_view>

namespace memreplay {

// For a terminal or any line-oriented output: every control character (C0, DEL and the C1
// controls U+0080-U+009F, which some terminals obey) as a visible escape: \n, \r, \t, \e, else
// \xNN (U+0080-U+009F as \u0080-\u009f); a backslash stays a backslash. One line in, one line out.
std::string terminal_safe(std::string_view text);

// For XML text and attribute values: & < > " ' as entities, and the characters XML 1.0 cannot
// hold at all (controls but tab, newline and carriage return; U+FFFE, U+FFFF) as terminal_safe
// writes them. `keep_newlines`: newlines and tabs stay (element text), else they are escaped too
// (attributes, where a parser would turn them into spaces).
std::string xml_safe(std::string_view text, bool keep_newlines = false);

// For one Markdown table cell or list item: terminal_safe, then every ASCII punctuation character
// backslash-escaped (CommonMark's rule), so nothing in the text becomes markup: no heading, link,
// image, table column or HTML.
std::string markdown_safe(std::string_view text);

// JSON text (nlohmann::json::dump()) made safe inside an HTML <script> element: every < > & as
// \u003c \u003e \u0026 and U+2028/U+2029 as \u2028/\u2029. Those characters only occur inside
// JSON strings, where the escapes mean the same, so the JSON parses to the same value; and no
// "</script", "<!--" or "<script" can appear.
std::string json_for_script(std::string_view json);

}  // namespace memreplay
