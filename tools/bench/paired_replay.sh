#!/usr/bin/env bash
# Replay speed of two builds side by side: OLD and NEW replay_bench alternate ROUNDS times (old
# first), each round one run of BM_ReplayGpt2Generate/POLICY; prints every pair, the medians, the
# median of new/old ratios with a bootstrap 95% interval, and the instructions each build spends
# inside ReplaySession::feed_batch (callgrind: independent of the machine's load and clock).
#   tools/bench/paired_replay.sh OLD/replay_bench NEW/replay_bench [ROUNDS=20] [POLICY=pytorch]
set -euo pipefail
old=$1 new=$2 rounds=${3:-20} policy=${4:-pytorch}
filter="Gpt2Generate/${policy}\$"
speed() {  # M events/s of one run (items_per_second, from CPU time)
  "$1" --benchmark_filter="$filter" --benchmark_min_time=0.3 --benchmark_format=json 2>/dev/null |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["benchmarks"][0]["items_per_second"]/1e6)'
}
instructions() {
  local out; out=$(mktemp)
  valgrind --tool=callgrind --callgrind-out-file="$out" --toggle-collect='memreplay::ReplaySession::feed_batch*' \
    "$1" --benchmark_filter="$filter" --benchmark_min_time=0.0001 2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
  rm -f "$out"
}
echo "# $(date -u +%FT%TZ) $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); policy $policy"
echo "# instructions in feed_batch: old $(instructions "$old"), new $(instructions "$new")"
pairs=$(for _ in $(seq "$rounds"); do echo "$(speed "$old") $(speed "$new")"; done)
echo "# old new (M events/s)"
echo "$pairs"
python3 - "$pairs" <<'PY'
import random, statistics, sys
pairs = [tuple(map(float, line.split())) for line in sys.argv[1].splitlines()]
ratios = [n / o for o, n in pairs]
random.seed(1)
boot = sorted(statistics.median(random.choices(ratios, k=len(ratios))) for _ in range(2000))
print(f"# medians: old {statistics.median(o for o, _ in pairs):.2f}, new {statistics.median(n for _, n in pairs):.2f} M events/s; "
      f"median new/old {statistics.median(ratios):.3f}, bootstrap 95% CI {boot[50]:.3f} .. {boot[1949]:.3f}")
PY
