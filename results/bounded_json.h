// Reading a JSON file that somebody else wrote (a committed baseline): bounded before it is parsed.
// The file must be a regular file of at most `max_bytes`; its nesting at most `max_depth` deep;
// every number must fit a double. What nlohmann::json would do otherwise: recurse once per level
// when the document is destroyed (a 50,000-deep array overflows the stack), take about 35 times
// the file's size in memory, and throw out_of_range for 1e400.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace memreplay::results {

struct JsonBounds {
  uint64_t max_bytes = 0;
  size_t max_depth = 0;
};

// The document of the file at `path`. Throws InputError naming the file, and the byte offset of the
// fault where there is one: not a regular file, too large, nested too deep, a number out of range,
// not JSON (nlohmann's message, which also covers ill-formed UTF-8).
nlohmann::json read_bounded_json(const std::string& path, JsonBounds bounds);
// The same for text in memory (`path` names it in messages).
nlohmann::json parse_bounded_json(std::string_view text, const std::string& path, JsonBounds bounds);

// `text` in single quotes for messages, control characters escaped as in JSON and invalid UTF-8
// replaced, so that a name read from a file cannot break a one-line message.
std::string in_quotes(std::string_view text);

}  // namespace memreplay::results
