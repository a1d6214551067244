#!/bin/bash
# For the H200 host: the CPU of each thread of one import of the ~1 GB fixture by each build (read
# from /proc every 50 ms: which thread is the critical path), then the unpickler's fuzz targets on
# its 16 cores (fuzz/parallel.sh), results in $OUT. DIR holds bundle/ (tools/bench/h200_bundle.sh)
# and fuzz/ (fuzz/bundle.sh ... unpickle_fuzz snapshot_import_fuzz one_pass_dict_fuzz).
#   OUT=results tools/bench/import_thread_cpu_and_fuzz.sh DIR
set -uo pipefail
D=$(cd "$1" && pwd)
B=$D/bundle W=/tmp/w
mkdir -p $W
[ -f $W/big.pickle ] || python3 $B/make_big_snapshot.py $B/gpt2_generate.default.pickle.xz $W/big.pickle --bytes 1e9
for side in base new; do
  LD_LIBRARY_PATH=$B/$side/lib $B/$side/memreplay import $W/big.pickle -o $W/t.mrt >/dev/null &
  pid=$!
  start=$(date +%s%N)
  while kill -0 $pid 2>/dev/null; do
    now=$(( ($(date +%s%N) - start) / 1000000 ))
    for t in /proc/$pid/task/*; do s=$(cat $t/stat 2>/dev/null) || continue; set -- ${s#*) }; echo "$now ${t##*/} ${12} ${13}"; done
    sleep 0.05
  done > $W/samples.$side
  wait $pid
  end=$(( ($(date +%s%N) - start) / 1000000 ))
  echo "== $side: wall $end ms; per thread (last sample): tid, user+sys ms, first and last ms it gained CPU"
  awk '{cpu = ($3 + $4) * 10; if (!($2 in last) || cpu > last[$2]) { if (!($2 in first) && cpu > 0) first[$2] = $1; if (cpu > last[$2]) gained[$2] = $1; last[$2] = cpu } }
       END { for (t in last) printf "  tid %s: %6d ms cpu, busy from %5d to %5d ms\n", t, last[t], first[t], gained[t] }' $W/samples.$side | sort -k3 -rn
done
rm -f $W/big.pickle
SEED_OFFSET=700 bash $D/fuzz/parallel.sh $D/fuzz $OUT/fuzz 500 unpickle_fuzz 6 > $OUT/unpickle.txt 2>&1 &
SEED_OFFSET=700 bash $D/fuzz/parallel.sh $D/fuzz $OUT/fuzz 500 snapshot_import_fuzz 7 > $OUT/snapshot.txt 2>&1 &
SEED_OFFSET=700 bash $D/fuzz/parallel.sh $D/fuzz $OUT/fuzz 500 one_pass_dict_fuzz 3 > $OUT/onepass.txt 2>&1 &
wait
tail -n 4 $OUT/unpickle.txt $OUT/snapshot.txt $OUT/onepass.txt
