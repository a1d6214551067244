#!/bin/bash
# usage: cgall.sh LABEL BIN [LD_LIBRARY_PATH]; writes ${OUT:-/tmp/s11s/cg}/LABEL.tsv: policy, Ir in feed_batch, Ir per event
label=$1; bin=$2; lib=$3; out=${OUT:-/tmp/s11s/cg}/$label.tsv; : > $out
names=$(LD_LIBRARY_PATH=$lib $bin --benchmark_list_tests | grep '^BM_Policy/')
for n in $names; do
  f=${OUT:-/tmp/s11s/cg}/$label.$(echo $n | tr '/:' '__').out
  LD_LIBRARY_PATH=$lib nice -n 15 valgrind --tool=callgrind --callgrind-out-file=$f --toggle-collect='memreplay::ReplaySession::feed_batch*' $bin --benchmark_filter="^$n\$" --benchmark_min_time=0.0001 > /dev/null 2>&1
  ir=$(grep -m1 '^summary:' $f | awk '{print $2}')
  echo -e "$n\t$ir\t$(( ir / 302078 ))" >> $out
done
