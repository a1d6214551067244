// How the CLI talks about itself: help wrapped at 100 columns, without CLI11's type names (TEXT,
// UINT, :FILE), and parse errors as one line, with a suggestion for a misspelt option or command.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

namespace memreplay::cli {

inline constexpr size_t kHelpWidth = 100;

// `text` wrapped to kHelpWidth: each line keeps its leading spaces (continuations get them too);
// an example line ("  memreplay ...") is wrapped with a shell continuation (" \") so that it can
// still be pasted.
std::string wrap_help_text(std::string_view text);

// The formatter of every command's --help.
std::shared_ptr<CLI::Formatter> help_formatter();

// The one line main() prints for a parse error of `app` (which the parse left on the subcommand
// it was in), "memreplay: ..." without the newline.
std::string parse_error_line(const CLI::App& app, const CLI::ParseError& error);

// Levenshtein distance (insertions, deletions, substitutions), for the suggestions.
size_t edit_distance(std::string_view a, std::string_view b);

}  // namespace memreplay::cli
