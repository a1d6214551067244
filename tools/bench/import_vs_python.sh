#!/usr/bin/env bash
# Whole process against whole process, as the import target is stated: `memreplay import F`
# against `python3 -c 'import pickle; pickle.load(...)'` on the same file, alternating, ROUNDS
# times (default 3), each under /usr/bin/time. Prints wall seconds, CPU seconds (user+sys) and
# maximum resident set size of every run, then the median ratios.
#   tools/bench/import_vs_python.sh build/tools/memreplay FILE [ROUNDS]
# FILE may be compressed (.xz etc.); python then reads it through the matching module (lzma,
# gzip), which is what a Python user would have to do for the same file.
set -euo pipefail
memreplay=$1
file=$2
rounds=${3:-3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
case $(head -c 6 "$file" | od -An -tx1 | tr -d ' \n') in
  fd377a585a00*) open="__import__('lzma').open" ;;
  1f8b*) open="__import__('gzip').open" ;;
  *) open="open" ;;
esac
python_code="import pickle; pickle.load($open('$file', 'rb'))"
fmt="%e %U %S %M"
for ((i = 1; i <= rounds; i++)); do
  /usr/bin/time -o "$out/m$i" -f "$fmt" "$memreplay" import "$file" -o "$out/t.mrt" >/dev/null
  /usr/bin/time -o "$out/p$i" -f "$fmt" python3 -c "$python_code"
  read -r mw mu ms mr <"$out/m$i"
  read -r pw pu ps pr <"$out/p$i"
  # awk, not bc: the lent GPU host has no bc.
  awk -v i="$i" -v mw="$mw" -v mc="$(awk "BEGIN{print $mu + $ms}")" -v mr="$mr" \
      -v pw="$pw" -v pc="$(awk "BEGIN{print $pu + $ps}")" -v pr="$pr" -v ratios="$out/ratios" 'BEGIN {
    printf "round %d  memreplay %6.2f s wall %6.2f s cpu %7.0f MB   python %6.2f s wall %6.2f s cpu %7.0f MB\n",
      i, mw, mc, mr / 1024, pw, pc, pr / 1024
    print pw / mw, pc / mc >>ratios
  }'
done
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
printf 'median python/memreplay: %.2fx wall, %.2fx cpu\n' \
  "$(cut -d' ' -f1 "$out/ratios" | median)" "$(cut -d' ' -f2 "$out/ratios" | median)"
