#!/usr/bin/env bash
# Two memreplay builds against python on one .xz snapshot, for an idle machine (the H200 host):
#   1. the ceiling: what the decode alone costs, whole process (python's lzma.open(F).read() and,
#      where xz is installed, `xz -dc F`), against the whole python import; our import cannot beat
#      the decode, so python's time over the decode's is the best ratio there can be;
#   2. the outputs of both builds compared (cmp) on the .xz and on the decompressed pickle;
#   3. import_vs_python.sh on both files, the builds alternating, ROUNDS rounds each (default 7);
#   4. with BIG_ROUNDS > 0, the ~1 GB snapshot tools/make_big_snapshot.py builds from FILE: md5 of
#      both outputs, then import_vs_python.sh on it, BIG_ROUNDS rounds per build (python: ~6 GB).
#   tools/bench/import_side_by_side.sh BASE_MEMREPLAY NEW_MEMREPLAY FILE.pickle.xz [ROUNDS] [BIG_ROUNDS]
# import_vs_python.sh and make_big_snapshot.py are looked for beside this script, then in tools/.
# Needs python3, awk and /usr/bin/time (no bc). Prints everything to stdout.
set -euo pipefail
base=$1 new=$2 file=$3 rounds=${4:-7} big_rounds=${5:-0}
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
nproc; grep -m1 "model name" /proc/cpuinfo || true; python3 --version; cat /proc/loadavg
python3 -c "import lzma, shutil; shutil.copyfileobj(lzma.open('$file'), open('$out/plain.pickle', 'wb'))"

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
# Median wall and CPU (user + sys) seconds of a command run ROUNDS times, and the fastest wall.
timed() {
  local name=$1
  shift
  : >"$out/runs"
  for ((i = 1; i <= rounds; i++)); do
    /usr/bin/time -o "$out/t" -f "%e %U %S" "$@" >/dev/null
    awk '{print $1, $2 + $3}' "$out/t" >>"$out/runs"
  done
  printf '%-28s median %.3f s wall, %.3f s cpu; fastest %.3f s wall\n' "$name" "$(cut -d' ' -f1 "$out/runs" | median)" \
    "$(cut -d' ' -f2 "$out/runs" | median)" "$(cut -d' ' -f1 "$out/runs" | sort -g | head -1)"
}
echo "== the ceiling on $file"
timed "python lzma read only" python3 -c "import lzma; lzma.open('$file').read()"
if command -v xz >/dev/null; then timed "xz -dc" xz -dc "$file"; fi
timed "python startup" python3 -c "import pickle, lzma"
timed "python pickle.load (.xz)" python3 -c "import pickle, lzma; pickle.load(lzma.open('$file', 'rb'))"
timed "python pickle.load (plain)" python3 -c "import pickle; pickle.load(open('$out/plain.pickle', 'rb'))"

echo "== same output"
for f in "$file" "$out/plain.pickle"; do
  "$base" import "$f" -o "$out/base.mrt" >/dev/null
  "$new" import "$f" -o "$out/new.mrt" >/dev/null
  cmp "$out/base.mrt" "$out/new.mrt" && echo "identical: $(md5sum <"$out/new.mrt" | cut -c1-32) ($(basename "$f"))"
done

cat /proc/loadavg
for pass in 1 2; do
  for b in base new; do
    bin=$base
    [[ $b == new ]] && bin=$new
    echo "== $b import .xz (pass $pass)"
    bash "$here/import_vs_python.sh" "$bin" "$file" "$rounds"
    echo "== $b import plain pickle (pass $pass)"
    bash "$here/import_vs_python.sh" "$bin" "$out/plain.pickle" "$rounds"
  done
done
cat /proc/loadavg
if ((big_rounds > 0)); then
  maker=$here/make_big_snapshot.py
  [[ -f $maker ]] || maker=$here/../make_big_snapshot.py
  python3 "$maker" "$file" "$out/big.pickle" --bytes 1e9 | tail -1
  "$base" import "$out/big.pickle" -o "$out/base.mrt" >/dev/null
  "$new" import "$out/big.pickle" -o "$out/new.mrt" >/dev/null
  md5sum "$out/base.mrt" "$out/new.mrt"
  for b in base new; do
    bin=$base
    [[ $b == new ]] && bin=$new
    echo "== $b import 1 GB"
    bash "$here/import_vs_python.sh" "$bin" "$out/big.pickle" "$big_rounds"
  done
  cat /proc/loadavg
fi
