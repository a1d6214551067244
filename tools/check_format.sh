#!/usr/bin/env bash
# Fails when a C or C++ source is not formatted as .clang-format says (clang-format --dry-run).
#   tools/check_format.sh           every tracked source
#   tools/check_format.sh FILE...   these files only
set -euo pipefail
cd "$(dirname "$0")/.."
clang_format=${CLANG_FORMAT:-clang-format}
if (($#)); then files=("$@"); else mapfile -t files < <(git ls-files '*.cpp' '*.h' '*.c' ':!fuzz/corpus' ':!tests/data'); fi
"$clang_format" --dry-run --Werror "${files[@]}"
echo "check_format: ${#files[@]} files formatted as .clang-format says"
