#!/usr/bin/env bash
# The repository's own rules, checked in CI: no source or test file over 600 lines, the README
# within 300 lines, docs/ under 60 files and 1 MB with no page over 400 lines, and no text about
# who did what when or about a sibling checkout outside test set-up.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
fail() { echo "check_tree: $*" >&2; status=1; }

while read -r lines file; do
  [ "$file" = total ] && continue
  ((lines > 600)) && fail "$file has $lines lines (at most 600)"
done < <(git ls-files '*.cpp' '*.h' '*.c' '*.py' '*.cu' ':!fuzz/corpus' ':!tests/data' | xargs wc -l)

readme=$(wc -l <README.md)
((readme > 300)) && fail "README.md has $readme lines (at most 300)"
if [ -d docs ]; then
  files=$(git ls-files docs | wc -l)
  bytes=$(git ls-files -z docs | xargs -0 cat | wc -c)
  ((files >= 60)) && fail "docs/ has $files files (fewer than 60)"
  ((bytes >= 1000000)) && fail "docs/ has $bytes bytes (under 1 MB)"
  while read -r lines file; do
    [ "$file" = total ] && continue
    ((lines > 400)) && fail "$file has $lines lines (at most 400)"
  done < <(git ls-files 'docs/*.md' | xargs -r wc -l)
fi

history='(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|last|this|next) session|helper'"'"'s|issue [0-9]+|\.\./shared'
if git grep -n -i -E "$history" -- ':!tools/check_tree.sh' ':!CHANGELOG.md'; then
  fail "the lines above speak of history or of ../shared (the repository speaks of the product only)"
fi
((status == 0)) && echo "check_tree: sizes and wording as the rules say"
exit $status
