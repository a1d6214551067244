#!/bin/bash
# import_corpus_diff.sh BASE NEW [DIR...]: `memreplay import` of every file under the fuzz corpora
# (default: fuzz/corpus/{unpickle,snapshot_import,compressed_import,decompress}_fuzz) with both
# binaries; prints each file whose exit status, error line or output bytes differ, then a count.
# Exit 1 if any differs.
set -u
base=$1 new=$2; shift 2
here=$(cd "$(dirname "$0")/../.." && pwd)
dirs=("$@")
[ ${#dirs[@]} -eq 0 ] && dirs=("$here"/fuzz/corpus/{unpickle,snapshot_import,compressed_import,decompress}_fuzz)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
files=0 differ=0 failed=0
while IFS= read -r f; do
  files=$((files + 1))
  "$base" import "$f" -o "$tmp/b.mrt" >"$tmp/b.out" 2>"$tmp/b.err"; rb=$?
  "$new" import "$f" -o "$tmp/n.mrt" >"$tmp/n.out" 2>"$tmp/n.err"; rn=$?
  # The summary line names the output file and a wall time: compare everything but the time.
  sed -i -E 's/ in [0-9.]+ s$//; s#'"$tmp"'/[bn]\.mrt#OUT#' "$tmp"/b.out "$tmp"/n.out "$tmp"/b.err "$tmp"/n.err
  same=1
  [ $rb -eq $rn ] || same=0
  cmp -s "$tmp/b.err" "$tmp/n.err" || same=0
  cmp -s "$tmp/b.out" "$tmp/n.out" || same=0
  if [ $rb -eq 0 ] && [ $rn -eq 0 ]; then cmp -s "$tmp/b.mrt" "$tmp/n.mrt" || same=0; fi
  [ $rb -ne 0 ] && failed=$((failed + 1))
  if [ $same -eq 0 ]; then
    differ=$((differ + 1))
    echo "DIFFERS: $f (exit $rb vs $rn)"; head -c 300 "$tmp/b.err"; head -c 300 "$tmp/n.err"
  fi
  rm -f "$tmp"/b.mrt "$tmp"/n.mrt
done < <(find "${dirs[@]}" -type f | sort)
echo "$files files: $differ differ; $failed refused by both (same exit status and error line)"
[ $differ -eq 0 ]
