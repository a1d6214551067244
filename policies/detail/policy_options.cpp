// The policy option parser (syntax and value rules in policy_options.h).
#include "policies/detail/policy_options.h"

#include <cctype>
#include <charconv>

#include "base/units.h"
#include "policies/registry.h"

namespace memreplay::detail {
namespace {

bool is_separator(char ch) { return ch == ',' || ch == ':' || ch == '[' || ch == ']'; }
bool is_separator(std::string_view token) { return token.size() == 1 && is_separator(token[0]); }

// PyTorch's ConfigTokenizer: `, : [ ]` are tokens of their own, whitespace is dropped.
std::vector<std::string> tokenize(std::string_view options) {
  std::vector<std::string> tokens;
  std::string buffer;
  for (const char ch : options) {
    if (is_separator(ch)) {
      if (!buffer.empty()) tokens.push_back(std::move(buffer));
      buffer.clear();
      tokens.emplace_back(1, ch);
    } else if (!std::isspace(static_cast<unsigned char>(ch))) {
      buffer += ch;
    }
  }
  if (!buffer.empty()) tokens.push_back(std::move(buffer));
  return tokens;
}

std::string quoted(std::string_view text) {
  std::string out(1, '\'');
  out.append(text).push_back('\'');
  return out;
}

}  // namespace

PolicyOptions::PolicyOptions(std::string_view policy, std::string_view options,
                             std::initializer_list<std::string_view> valid_keys)
    : policy_(policy) {
  const std::vector<std::string> tokens = tokenize(options);
  size_t i = 0;
  while (i < tokens.size()) {
    PolicyOption entry;
    entry.key = tokens[i];
    if (is_separator(entry.key))
      throw PolicySpecError(policy_ + " options: expected an option name, got " + quoted(entry.key));
    bool known = false;
    std::string valid;
    for (const std::string_view key : valid_keys) {
      known = known || key == entry.key;
      valid += (valid.empty() ? "" : ", ") + std::string(key);
    }
    if (!known)
      throw PolicySpecError(policy_ + ": unknown option " + quoted(entry.key) +
                            " (valid: " + (valid.empty() ? "none, it takes no options" : valid) + ")");
    if (i + 1 >= tokens.size() || tokens[i + 1] != ":") fail(entry, "expected ':' and a value");
    if (i + 2 >= tokens.size() || tokens[i + 2] == "," || tokens[i + 2] == ":" || tokens[i + 2] == "]")
      fail(entry, "missing value");
    i += 2;
    if (tokens[i] == "[") {
      entry.is_list = true;
      ++i;
      while (i < tokens.size() && tokens[i] != "]") entry.list.push_back(tokens[i++]);
      if (i >= tokens.size()) fail(entry, "missing closing ']'");
    } else {
      entry.value = tokens[i];
    }
    ++i;  // past the value or the ']'
    if (i < tokens.size()) {
      if (tokens[i] != ",") fail(entry, "expected ',' after the value, got " + quoted(tokens[i]));
      ++i;
    }
    entries_.push_back(std::move(entry));
  }
}

void PolicyOptions::fail(const PolicyOption& option, const std::string& why) const {
  throw PolicySpecError(policy_ + " option " + quoted(option.key) + ": " + why);
}

const std::string& PolicyOptions::scalar(const PolicyOption& option) const {
  if (option.is_list) fail(option, "takes a single value, not a list");
  return option.value;
}

uint64_t PolicyOptions::to_unsigned(const PolicyOption& option, std::string_view token) const {
  uint64_t value = 0;
  const auto* end = token.data() + token.size();
  const auto [ptr, ec] = std::from_chars(token.data(), end, value);
  if (token.empty() || ec != std::errc{} || ptr != end)
    fail(option, "expected a non-negative integer, got " + quoted(token));
  return value;
}

double PolicyOptions::to_number(const PolicyOption& option) const {
  const std::string& text = scalar(option);
  double value = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc{} || ptr != end) fail(option, "expected a number, got " + quoted(text));
  return value;
}

uint64_t PolicyOptions::to_bytes(const PolicyOption& option) const {
  const std::string& text = scalar(option);
  const auto bytes = parse_byte_size(text);
  if (!bytes)
    fail(option, "expected bytes (e.g. 1GiB, 512MiB, 64MB or 4096; units " + std::string(kByteUnits) + "), got " +
                     quoted(text));
  return *bytes;
}

bool PolicyOptions::to_bool(const PolicyOption& option, Booleans spelling) const {
  const std::string& text = scalar(option);
  if (text == "True") return true;
  if (text == "False") return false;
  if (spelling == Booleans::either) {
    if (text == "true") return true;
    if (text == "false") return false;
    fail(option, "expected True, False, true or false, got " + quoted(text));
  }
  fail(option, "expected True or False, got " + quoted(text));
}

}  // namespace memreplay::detail
