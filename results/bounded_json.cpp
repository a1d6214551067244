#include "results/bounded_json.h"

#include <charconv>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "base/units.h"
#include "proto/input_error.h"
#include "proto/wire_format.h"

namespace memreplay::results {
namespace {

bool starts_number(char c) { return c == '-' || (c >= '0' && c <= '9'); }
bool in_number(char c) { return starts_number(c) || c == '+' || c == '.' || c == 'e' || c == 'E'; }

// One pass over the text, outside string literals: the nesting depth and every number's range.
// The grammar itself is left to nlohmann::json, which reports where it breaks.
void check_bounds(std::string_view text, const std::string& path, size_t max_depth) {
  size_t depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;  // the escaped character cannot end the string
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth)
        throw InputError::at_byte(path, i, "nested deeper than " + std::to_string(max_depth) + " levels");
    } else if (c == ']' || c == '}') {
      if (depth > 0) --depth;
    } else if (starts_number(c)) {
      size_t end = i;
      while (end < text.size() && in_number(text[end])) ++end;
      double value = 0;
      const auto [stop, error] = std::from_chars(text.data() + i, text.data() + end, value);
      if (error == std::errc::result_out_of_range)
        throw InputError::at_byte(
            path, i,
            "the number " + std::string(text.substr(i, std::min<size_t>(end - i, 40))) + " does not fit a double");
      (void)stop;
      i = end - 1;
    }
  }
}

}  // namespace

nlohmann::json parse_bounded_json(std::string_view text, const std::string& path, JsonBounds bounds) {
  if (text.size() > bounds.max_bytes)
    throw InputError::at_byte(path, bounds.max_bytes, "larger than " + format_bytes(bounds.max_bytes));
  check_bounds(text, path, bounds.max_depth);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError::at_byte(path, e.byte == 0 ? 0 : e.byte - 1, std::string("not JSON: ") + e.what());
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path + ": not JSON: " + e.what());
  }
}

nlohmann::json read_bounded_json(const std::string& path, JsonBounds bounds) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) throw InputError(path + ": cannot read: no such file");
  if (!std::filesystem::is_regular_file(status))
    throw InputError(
        path + ": cannot read: " + (std::filesystem::is_directory(status) ? "a directory" : "not a regular file"));
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) throw InputError(path + ": cannot read: " + ec.message());
  if (size > bounds.max_bytes)
    throw InputError::at_byte(
        path, bounds.max_bytes,
        "larger than " + format_bytes(bounds.max_bytes) + " (" + std::to_string(size) + " bytes)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot read");
  // One byte more than its size, to see a file that grew since its size was taken.
  std::string text(static_cast<size_t>(size) + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) throw InputError(path + ": cannot read");
  if (static_cast<uint64_t>(in.gcount()) > size) throw InputError(path + ": changed while it was read");
  text.resize(static_cast<size_t>(in.gcount()));
  return parse_bounded_json(text, path, bounds);
}

std::string in_quotes(std::string_view text) {
  const std::string json = nlohmann::json(wire::valid_utf8(text)).dump();
  std::string out = "'";
  out.append(json, 1, json.size() - 2);  // the JSON literal without its double quotes
  return out += '\'';
}

}  // namespace memreplay::results
