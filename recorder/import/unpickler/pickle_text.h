// Unpickled values as text, the way Python would print them: what annotation metadata and
// allocator settings become in a trace header (which holds strings only).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "recorder/import/unpickler/pickle_reader.h"

namespace memreplay::pickle {

// str/bytes as they are; None/True/False as in Python; ints in decimal; floats as Python's
// repr() ("0.0", "1e+16"); containers as [a,b] and {k:v}. Output is cut at 4 KiB and nesting
// at 8 levels: a hostile pickle can alias one list into itself over and over.
std::string python_text(Value v);

// A dict flattened to (key, text) pairs, nested dict keys joined with '.':
// {"a": 1, "b": {"1": 0, "2": 4}} → ("a", "1"), ("b.1", "0"), ("b.2", "4"). At most 4096 pairs,
// 8 levels, 256 bytes of key per level and 4 KiB of text per value: at most ~24 MiB whatever
// aliasing the dict holds.
std::vector<std::pair<std::string, std::string>> flatten_dict(Value dict);

}  // namespace memreplay::pickle
