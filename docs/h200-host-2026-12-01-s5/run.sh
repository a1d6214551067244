#!/bin/bash
# On the H200 host (its CPU only): every policy's replay speed, c9ca697 (base) vs the fifth
# session's main (new), alternating; import against python, whole process against whole process.
cd "$(dirname "$0")"
B=$PWD
mkdir -p /work/main /work/shared/traces 2>/dev/null || echo "cannot create /work"
cp gpt2_generate.default.pickle.xz /work/shared/traces/ || echo "cannot copy trace"
nproc; grep -m1 "model name" /proc/cpuinfo; cat /proc/loadavg
for b in new base; do
  for t in policy_bench memreplay; do
    printf '#!/bin/bash\nLD_LIBRARY_PATH=%s/%s/lib:%s/deps exec %s/%s/%s "$@"\n' "$B" $b "$B" "$B" $b $t > $B/$b-$t
    chmod +x $B/$b-$t
  done
done
$B/new-memreplay --version
bash best_of_policies.sh $B/base-policy_bench $B/new-policy_bench 5 2>&1 | tee $OUT/best_of_policies.txt
T=/tmp/imp; mkdir -p $T
python3 -c "import lzma,shutil; shutil.copyfileobj(lzma.open('$B/gpt2_generate.default.pickle.xz'), open('$T/g.pickle','wb'))"
cat /proc/loadavg
for b in new base; do
  echo "== $b import .xz"; bash import_vs_python.sh $B/$b-memreplay $B/gpt2_generate.default.pickle.xz 7
  echo "== $b import plain pickle"; bash import_vs_python.sh $B/$b-memreplay $T/g.pickle 7
done 2>&1 | tee $OUT/import_vs_python.txt
python3 make_big_snapshot.py $B/gpt2_generate.default.pickle.xz $T/big.pickle --bytes 1e9 2>&1 | tail -2
ls -la $T/big.pickle
cat /proc/loadavg
for b in new base; do echo "== $b import 1 GB"; bash import_vs_python.sh $B/$b-memreplay $T/big.pickle 2; done 2>&1 | tee $OUT/import_big.txt
cat /proc/loadavg
