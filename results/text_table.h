// Plain-text tables for the terminal: columns sized to their contents, headers wrapped onto several
// lines, long cells (policy specs) wrapped, one unit per byte column, so that a table fits in
// kTableWidth columns.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace memreplay::results {

inline constexpr size_t kTableWidth = 120;

struct TextColumn {
  std::string header;  // '\n' separates its lines
  bool left_aligned = false;
};

// Rows of cells ('\n' in a cell: more lines of that row). Columns two spaces apart; each line
// starts with `indent`. Widths count characters, not bytes (UTF-8 "÷" is one).
std::string render_table(const std::vector<TextColumn>& columns, const std::vector<std::vector<std::string>>& rows,
                         const std::string& indent = "");

// A policy spec broken after ':' or ',' into lines of at most `width` characters (a part longer
// than that is left whole).
std::string wrap_spec(const std::string& spec, size_t width);

// One unit for a column of byte counts: the largest binary unit (B, KiB, MiB, GiB, TiB) in which
// the largest value is at least 1.
struct ByteUnit {
  std::string name;  // "GiB"
  uint64_t bytes = 1;  // 1 << 30
};
ByteUnit byte_unit_for(const std::vector<uint64_t>& values);
// `bytes` in `unit`, without the unit's name: "7.53" (two decimals; whole bytes for B).
std::string format_in_unit(uint64_t bytes, const ByteUnit& unit);
// Each line of `text` broken at spaces into lines of at most `width` characters (a word longer
// than that stays whole), the lines after a break starting with `continuation`.
std::string wrap_text(const std::string& text, size_t width = kTableWidth, const std::string& continuation = "    ");
// 1234567 -> "1,234,567"
std::string format_count(uint64_t n);

// Characters in a UTF-8 string.
size_t display_width(const std::string& text);

}  // namespace memreplay::results
