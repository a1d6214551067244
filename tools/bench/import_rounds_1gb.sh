#!/bin/bash
# The ~1 GB fixture and gpt2_generate, two builds against python, whole process, for an idle
# machine (the H200 host): each round python3 pickle.load, then both builds, their order
# alternating; outputs compared (cmp) first. BUNDLE is tools/bench/h200_bundle.sh's (base-memreplay,
# new-memreplay, make_big_snapshot.py, gpt2_generate.default.pickle.xz).
#   [BIG_ROUNDS=7] [GEN_ROUNDS=9] tools/bench/import_rounds_1gb.sh BUNDLE
set -uo pipefail
B=$(cd "$1" && pwd)
W=/tmp/w; mkdir -p $W
nproc; grep -m1 "model name" /proc/cpuinfo; python3 --version; cat /proc/loadavg; uname -r; df -h /tmp | tail -1
t0=$(date +%s)
python3 $B/make_big_snapshot.py $B/gpt2_generate.default.pickle.xz $W/big.pickle --bytes 1e9
echo "fixture built in $(( $(date +%s) - t0 )) s"; ls -l $W/big.pickle
python3 -c "import lzma, shutil; shutil.copyfileobj(lzma.open('$B/gpt2_generate.default.pickle.xz'), open('$W/gen.pickle', 'wb'))"
for f in big.pickle gen.pickle; do
  $B/base-memreplay import $W/$f -o $W/b.mrt >/dev/null && $B/new-memreplay import $W/$f -o $W/n.mrt >/dev/null && cmp $W/b.mrt $W/n.mrt && echo "$f: outputs identical ($(stat -c %s $W/n.mrt) bytes)"
done
fmt="%e %U %S %M"
run_rounds() {  # file rounds
  local f=$1 rounds=$2
  ((rounds > 0)) || return 0
  for ((i = 1; i <= rounds; i++)); do
    /usr/bin/time -o $W/p -f "$fmt" python3 -c "import pickle; pickle.load(open('$W/$f', 'rb'))"
    if ((i % 2)); then  # the builds' order alternates too
      /usr/bin/time -o $W/n -f "$fmt" $B/new-memreplay import $W/$f -o $W/n.mrt >/dev/null
      /usr/bin/time -o $W/b -f "$fmt" $B/base-memreplay import $W/$f -o $W/b.mrt >/dev/null
    else
      /usr/bin/time -o $W/b -f "$fmt" $B/base-memreplay import $W/$f -o $W/b.mrt >/dev/null
      /usr/bin/time -o $W/n -f "$fmt" $B/new-memreplay import $W/$f -o $W/n.mrt >/dev/null
    fi
    read -r pw pu ps pr <$W/p; read -r bw bu bs br <$W/b; read -r nw nu ns nr <$W/n
    awk -v f=$f -v i=$i -v pw=$pw -v pu=$pu -v ps=$ps -v pr=$pr -v bw=$bw -v bu=$bu -v bs=$bs -v br=$br \
        -v nw=$nw -v nu=$nu -v ns=$ns -v nr=$nr 'BEGIN {
      printf "%s round %d  python %6.2f s (%5.2f u %5.2f s, %5.0f MB)  base %5.2f s (%5.2f u %5.2f s, %4.0f MB) %5.2fx  new %5.2f s (%5.2f u %5.2f s, %4.0f MB) %5.2fx\n",
        f, i, pw, pu, ps, pr/1024, bw, bu, bs, br/1024, pw/bw, nw, nu, ns, nr/1024, pw/nw }'
    echo "$pw $bw $nw" >> $W/ratios.$f
  done
  med() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
  echo "$f median python/base $(awk '{print $1/$2}' $W/ratios.$f | med)x, python/new $(awk '{print $1/$3}' $W/ratios.$f | med)x over $rounds rounds"
}
run_rounds big.pickle ${BIG_ROUNDS:-7}
run_rounds gen.pickle ${GEN_ROUNDS:-9}
cat /proc/loadavg
