#!/bin/bash
# On the H200 host (its CPU only), from the folder pack.sh made: every policy's replay speed on
# gpt2_generate, aee7b48 (base) vs branch s6-async (new), two builds alternating, 7 rounds.
# Both binaries read the trace from the path they were built with (/work/wt6-async/../shared).
cd "$(dirname "$0")"
B=$PWD
mkdir -p /work/wt6-async /work/shared/traces || echo "cannot create /work"
[ -f /work/shared/traces/gpt2_generate.default.pickle.xz ] || cp gpt2_generate.default.pickle.xz /work/shared/traces/ ||
  echo "cannot copy trace"
nproc; grep -m1 "model name" /proc/cpuinfo; cat /proc/loadavg
for b in base new; do
  printf '#!/bin/bash\nLD_LIBRARY_PATH=%s/%s/lib:%s/deps exec %s/%s/policy_bench "$@"\n' "$B" $b "$B" "$B" $b > $B/$b-policy_bench
  chmod +x $B/$b-policy_bench
done
bash best_of_policies.sh $B/base-policy_bench $B/new-policy_bench 7 2>&1 | tee ${OUT:-.}/best_of_policies.txt
cat /proc/loadavg
