#!/bin/bash
# On the H200 host's CPU: every policy's replay speed base (aee7b48) vs new (sixth session's main),
# alternating; import against python, both builds, whole process against whole process.
cd "$(dirname "$0")"
B=$PWD
nproc; grep -m1 "model name" /proc/cpuinfo; cat /proc/loadavg
$B/new-memreplay --version; $B/base-memreplay --version
bash best_of_policies.sh $B/base-policy_bench $B/new-policy_bench 5 2>&1 | tee $OUT/best_of_policies.txt
cat /proc/loadavg
bash import_side_by_side.sh $B/base-memreplay $B/new-memreplay $B/gpt2_generate.default.pickle.xz 7 2 2>&1 | tee $OUT/import_side_by_side.txt
cat /proc/loadavg
