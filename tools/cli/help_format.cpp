#include "tools/cli/help_format.h"

#include <algorithm>
#include <numeric>
#include <sstream>
#include <vector>

#include "base/text_escape.h"

namespace memreplay::cli {
namespace {

constexpr size_t kNameColumn = 30;  // where option descriptions start

size_t leading_spaces(std::string_view line) {
  const size_t at = line.find_first_not_of(' ');
  return at == std::string_view::npos ? line.size() : at;
}

std::vector<std::string_view> words_of(std::string_view text) {
  std::vector<std::string_view> words;
  for (size_t at = 0; at < text.size();) {
    const size_t start = text.find_first_not_of(' ', at);
    if (start == std::string_view::npos) break;
    const size_t end = std::min(text.find(' ', start), text.size());
    words.push_back(text.substr(start, end - start));
    at = end;
  }
  return words;
}

// One line's words filled to `width`, the first line after `first_indent` columns already used,
// the others indented by `indent`; `continuation` ends every line but the last.
std::string fill(std::string_view line, size_t first_indent, size_t indent, std::string_view continuation = "") {
  std::string out;
  size_t column = first_indent;
  bool line_empty = true;
  for (const std::string_view word : words_of(line)) {
    if (!line_empty && column + 1 + word.size() + continuation.size() > kHelpWidth) {
      out += continuation;
      out += '\n' + std::string(indent, ' ');
      column = indent;
      line_empty = true;
    }
    if (!line_empty) out += ' ', ++column;
    out += word;
    column += word.size();
    line_empty = false;
  }
  return out;
}

// The first sentence of a command's description: its line in the list of commands.
std::string_view first_sentence(std::string_view description) {
  description = description.substr(0, description.find('\n'));
  const size_t stop = description.find(". ");
  return stop == std::string_view::npos ? description : description.substr(0, stop + 1);
}

// An option's value as help shows it: its option_text, else its long name in capitals.
std::string value_name(const CLI::Option* option) {
  if (!option->get_option_text().empty()) return option->get_option_text();
  const auto& long_names = option->get_lnames();
  std::string name = long_names.empty() ? option->get_name() : long_names.front();
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return c == '-' ? '_' : std::toupper(c); });
  return name;
}

class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_option_opts(const CLI::Option* option) const override {
    if (option->get_expected_max() == 0) return "";  // a flag
    std::string out = option->get_positional() ? "" : " " + value_name(option);
    if (option->get_expected_max() == CLI::detail::expected_max_vector_size) out += " ...";
    if (option->get_required() && !option->get_positional()) out += " (required)";
    return out;
  }
  std::string make_option(const CLI::Option* option, bool is_positional) const override {
    std::string left = "  " + make_option_name(option, is_positional) + make_option_opts(option);
    const std::string description = make_option_desc(option);
    if (description.empty()) return left + "\n";
    if (left.size() + 2 > kNameColumn)
      return left + "\n" + std::string(kNameColumn, ' ') + fill_paragraphs(description);
    left.resize(kNameColumn, ' ');
    return left + fill_paragraphs(description);
  }
  std::string make_description(const CLI::App* app) const override {
    const std::string description = app->get_description();
    return description.empty() ? "" : wrap_help_text(description);
  }
  std::string make_subcommand(const CLI::App* sub) const override {
    std::string left = "  " + sub->get_display_name(true);
    left.resize(std::max(left.size() + 1, kNameColumn), ' ');
    return left + fill(first_sentence(sub->get_description()), left.size(), kNameColumn) + "\n";
  }

 private:
  static std::string fill_paragraphs(std::string_view text) {
    std::string out;
    for (size_t at = 0; at <= text.size();) {
      const size_t end = std::min(text.find('\n', at), text.size());
      out += (at == 0 ? "" : std::string(kNameColumn, ' ')) +
             fill(text.substr(at, end - at), kNameColumn, kNameColumn) + "\n";
      at = end + 1;
    }
    return out;
  }
};

// The command the parse was in: the deepest subcommand chosen.
const CLI::App& innermost(const CLI::App& app) {
  const CLI::App* at = &app;
  for (;;) {
    const auto chosen = at->get_subcommands();
    if (chosen.empty()) return *at;
    at = chosen.front();
  }
}

// The closest of `names` to `word`, when it is close enough to be a typo.
std::string closest(std::string_view word, const std::vector<std::string>& names) {
  std::string best;
  size_t best_distance = SIZE_MAX;
  for (const auto& name : names) {
    const size_t d = edit_distance(word, name);
    if (d < best_distance) best = name, best_distance = d;
  }
  const size_t allowed = std::max<size_t>(2, word.size() / 3);
  return best_distance <= allowed ? best : "";
}

std::string suggestion(const CLI::App& command, const std::string& message) {
  const size_t colon = message.find(": ");
  if (message.find("subcommand is required") != std::string::npos) {  // `memreplay replya`: no command matched
    std::vector<std::string> names;
    for (const CLI::App* sub : command.get_subcommands({})) names.push_back(sub->get_name());
    for (const std::string& word : command.remaining())
      if (!word.starts_with("-")) {
        const std::string match = closest(word, names);
        return match.empty() ? " ('" + word + "' is not a command)"
                             : " ('" + word + "' is not one: did you mean " + match + "?)";
      }
    return "";
  }
  if (colon == std::string::npos || message.find("not expected") == std::string::npos) return "";
  std::vector<std::string> options, subcommands;
  for (const CLI::Option* option : command.get_options()) {
    for (const auto& name : option->get_lnames()) options.push_back("--" + name);
    for (const auto& name : option->get_snames()) options.push_back("-" + name);
  }
  for (const CLI::App* sub : command.get_subcommands({})) subcommands.push_back(sub->get_name());
  std::istringstream extras(message.substr(colon + 2));
  for (std::string word; extras >> word;) {
    const std::string bare = word.substr(0, word.find('='));
    const std::string match = closest(bare, bare.starts_with("-") ? options : subcommands);
    if (!match.empty()) return " (did you mean " + match + "?)";
  }
  return "";
}

}  // namespace

std::string wrap_help_text(std::string_view text) {
  std::string out;
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find('\n', at), text.size());
    const std::string_view line = text.substr(at, end - at);
    const size_t indent = leading_spaces(line);
    const bool example = line.substr(indent).starts_with("memreplay ");
    out += std::string(indent, ' ') + (example ? fill(line, indent, indent + 4, " \\") : fill(line, indent, indent)) +
           "\n";
    at = end + 1;
  }
  return out;
}

std::shared_ptr<CLI::Formatter> help_formatter() {
  auto formatter = std::make_shared<HelpFormatter>();
  formatter->column_width(kNameColumn);
  return formatter;
}

std::string parse_error_line(const CLI::App& app, const CLI::ParseError& error) {
  const CLI::App& command = innermost(app);
  std::string message = error.what();
  std::replace(message.begin(), message.end(), '\n', ' ');
  const std::string name = command.get_parent() == nullptr ? "memreplay" : "memreplay " + command.get_name();
  return "memreplay: " + terminal_safe(message) + suggestion(command, message) + " (see `" + name + " --help`)";
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), size_t{0});
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace memreplay::cli
