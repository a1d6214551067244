#!/bin/bash
# For the H200 host, one call: import_rounds_1gb.sh's rounds (the ~1 GB fixture and gpt2_generate,
# two builds against python), then each build's threads' CPU over one import of the fixture (read
# from /proc every 50 ms: which thread is the critical path). BUNDLE is tools/bench/h200_bundle.sh's
# with import_rounds_1gb.sh and this script copied in.
#   [BIG_ROUNDS=15] [GEN_ROUNDS=9] BUNDLE/import_rounds_and_threads.sh
B=$(cd "$(dirname "$0")" && pwd)
BIG_ROUNDS=${BIG_ROUNDS:-15} GEN_ROUNDS=${GEN_ROUNDS:-9} bash $B/import_rounds_1gb.sh $B
W=/tmp/w
python3 $B/make_big_snapshot.py $B/gpt2_generate.default.pickle.xz $W/big.pickle --bytes 1e9 >/dev/null
for side in base new; do
  LD_LIBRARY_PATH=$B/$side/lib $B/$side/memreplay import $W/big.pickle -o $W/t.mrt >/dev/null &
  pid=$!; start=$(date +%s%N)
  while kill -0 $pid 2>/dev/null; do
    now=$(( ($(date +%s%N) - start) / 1000000 ))
    for t in /proc/$pid/task/*; do s=$(cat $t/stat 2>/dev/null) || continue; set -- ${s#*) }; echo "$now ${t##*/} ${12} ${13}"; done
    sleep 0.05
  done > $W/samples.$side
  wait $pid; end=$(( ($(date +%s%N) - start) / 1000000 ))
  echo "== $side: wall $end ms; threads with >= 100 ms CPU: tid, user+sys ms, first and last ms it gained CPU"
  awk '{cpu = ($3 + $4) * 10; if (!($2 in last) || cpu > last[$2]) { if (!($2 in first) && cpu > 0) first[$2] = $1; if (cpu > last[$2]) gained[$2] = $1; last[$2] = cpu } }
       END { for (t in last) if (last[t] >= 100) printf "  tid %s: %6d ms cpu, busy from %5d to %5d ms\n", t, last[t], first[t], gained[t] }' $W/samples.$side | sort -k3 -rn
done
