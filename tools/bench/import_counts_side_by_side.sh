#!/usr/bin/env bash
# Instructions, cycles and page faults of `memreplay import F`, two builds alternating, ROUNDS
# rounds each (default 5): the whole process (perf stat) and each thread (perf record samples
# every 100,000 instructions or cycles; the importer's main thread is the one with the lowest id).
# Also checks that both builds write the same bytes. Needs perf with hardware counters.
#   tools/bench/import_counts_side_by_side.sh BASE NEW FILE [ROUNDS]
set -euo pipefail
base=$1 new=$2 file=$3 rounds=${4:-5}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$base" import "$file" -o "$out/base.mrt" >/dev/null
"$new" import "$file" -o "$out/new.mrt" >/dev/null
if cmp -s "$out/base.mrt" "$out/new.mrt"; then echo "output: identical ($(md5sum <"$out/new.mrt" | cut -c1-32))"
else echo "output: DIFFERS"; exit 1; fi
rm -f "$out"/*.mrt
for ((i = 1; i <= rounds; i++)); do
  for build in base new; do
    bin=$base; [ $build = new ] && bin=$new
    perf stat -x, -e instructions:u,cycles:u,page-faults -o "$out/stat" "$bin" import "$file" -o "$out/t.mrt" >/dev/null 2>&1
    whole=$(awk -F, '/instructions/ {i=$1} /cycles/ {c=$1} /page-faults/ {f=$1}
      END {printf "whole: %.1f M instr, %.1f M cycles, %d faults", i/1e6, c/1e6, f}' "$out/stat")
    threads=""
    for ev in instructions:u cycles:u; do
      perf record -q -e "$ev" -c 100000 -o "$out/perf.data" "$bin" import "$file" -o "$out/t.mrt" >/dev/null 2>&1
      # One line per thread (perf's "pid" key is the thread: TID:COMMAND); the main thread's tid
      # is the smallest, the process id.
      t=$(perf report -i "$out/perf.data" --sort pid --stdio -n 2>/dev/null | grep -E '^ +[0-9]' |
        awk '{ split($3, a, ":"); tid = a[1] + 0; n = $2 * 0.1; all = all sprintf(" %.1f", n)
               if (main_tid == "" || tid < main_tid) { main_tid = tid; main = n } }
             END { printf "main %.1f M, all threads:%s", main, all }')
      threads="$threads | ${ev%%:*} $t"
    done
    rss=""
    if [ -x /usr/bin/time ]; then
      rss=$(/usr/bin/time -f "%M" "$bin" import "$file" -o "$out/t.mrt" 2>&1 >/dev/null | tail -1)
      rss=" | max RSS $rss KB"
    fi
    echo "round $i $build  $whole$threads$rss"
  done
done
