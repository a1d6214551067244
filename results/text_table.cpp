#include "results/text_table.h"

#include <algorithm>
#include <cstdio>

namespace memreplay::results {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out(1);
  for (const char c : text)
    if (c == '\n')
      out.emplace_back();
    else
      out.back() += c;
  return out;
}

std::string padded(const std::string& text, size_t width, bool left) {
  const size_t w = display_width(text);
  const std::string fill(width > w ? width - w : 0, ' ');
  return left ? text + fill : fill + text;
}

}  // namespace

size_t display_width(const std::string& text) {
  size_t n = 0;
  for (const unsigned char c : text) n += (c & 0xC0) != 0x80;  // count lead bytes only
  return n;
}

std::string render_table(const std::vector<TextColumn>& columns, const std::vector<std::vector<std::string>>& rows,
                         const std::string& indent) {
  std::vector<size_t> widths(columns.size(), 0);
  size_t header_lines = 1;
  for (size_t c = 0; c < columns.size(); ++c) {
    const auto lines = lines_of(columns[c].header);
    header_lines = std::max(header_lines, lines.size());
    for (const auto& l : lines) widths[c] = std::max(widths[c], display_width(l));
  }
  for (const auto& row : rows)
    for (size_t c = 0; c < row.size() && c < columns.size(); ++c)
      for (const auto& l : lines_of(row[c])) widths[c] = std::max(widths[c], display_width(l));

  std::string out;
  const auto emit = [&](const std::vector<std::vector<std::string>>& cells, size_t height, bool bottom_aligned) {
    for (size_t line = 0; line < height; ++line) {
      std::string text = indent;
      for (size_t c = 0; c < columns.size(); ++c) {
        const auto& parts = cells[c];
        const size_t offset = bottom_aligned ? height - parts.size() : 0;
        const std::string part = line >= offset && line - offset < parts.size() ? parts[line - offset] : "";
        text += (c == 0 ? "" : "  ") + padded(part, widths[c], columns[c].left_aligned);
      }
      while (!text.empty() && text.back() == ' ') text.pop_back();
      out += text + "\n";
    }
  };
  std::vector<std::vector<std::string>> header;
  for (const auto& column : columns) header.push_back(lines_of(column.header));
  emit(header, header_lines, true);
  for (const auto& row : rows) {
    std::vector<std::vector<std::string>> cells;
    size_t height = 1;
    for (size_t c = 0; c < columns.size(); ++c) {
      cells.push_back(lines_of(c < row.size() ? row[c] : ""));
      height = std::max(height, cells.back().size());
    }
    emit(cells, height, false);
  }
  return out;
}

std::string wrap_spec(const std::string& spec, size_t width) {
  std::vector<std::string> parts;  // each ends after a ':' or ','
  std::string part;
  for (const char c : spec) {
    part += c;
    if (c == ':' || c == ',') parts.push_back(std::move(part)), part.clear();
  }
  if (!part.empty()) parts.push_back(part);
  std::string out, line;
  for (const auto& p : parts) {
    if (!line.empty() && display_width(line) + display_width(p) > width) {
      out += line + "\n";
      line.clear();
    }
    line += p;
  }
  return out + line;
}

std::string wrap_text(const std::string& text, size_t width, const std::string& continuation) {
  std::string out;
  const auto paragraphs = lines_of(text);
  for (size_t p = 0; p < paragraphs.size(); ++p) {
    const std::string& paragraph = paragraphs[p];
    if (p + 1 == paragraphs.size() && paragraph.empty() && p > 0) break;  // after the text's last newline
    const size_t lead = std::min(paragraph.find_first_not_of(' '), paragraph.size());
    std::string line = paragraph.substr(0, lead);
    bool line_has_word = false;
    for (size_t start = lead; start < paragraph.size();) {
      const size_t end = std::min(paragraph.find(' ', start), paragraph.size());
      const std::string word = paragraph.substr(start, end - start);
      if (line_has_word && display_width(line) + 1 + display_width(word) > width) {
        out += line + "\n";
        line = continuation + word;
      } else {
        line += (line_has_word ? " " : "") + word;
      }
      line_has_word = true;
      start = end + 1;
    }
    out += line + "\n";
  }
  return out;
}

ByteUnit byte_unit_for(const std::vector<uint64_t>& values) {
  static const ByteUnit kUnits[] = {
      {"B", 1}, {"KiB", 1ull << 10}, {"MiB", 1ull << 20}, {"GiB", 1ull << 30}, {"TiB", 1ull << 40}};
  const uint64_t largest = values.empty() ? 0 : *std::max_element(values.begin(), values.end());
  ByteUnit unit = kUnits[0];
  for (const auto& u : kUnits)
    if (largest >= u.bytes) unit = u;
  return unit;
}

std::string format_in_unit(uint64_t bytes, const ByteUnit& unit) {
  if (unit.bytes == 1) return format_count(bytes);
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2f", double(bytes) / double(unit.bytes));
  return buffer;
}

std::string format_count(uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace memreplay::results
