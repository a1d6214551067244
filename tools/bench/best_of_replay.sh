#!/usr/bin/env bash
# Replay speed of two builds on a machine whose speed swings (a shared VM): OLD and NEW
# replay_bench alternate ROUNDS times, each run 5 repetitions of BM_ReplayGpt2Generate/POLICY;
# prints each round's fastest CPU time per build, then each build's fastest over all rounds as
# M events/s. Contention only ever adds time, so the minimum is the closest to the code's own
# speed; the paired medians of paired_replay.sh say how the two compare under the same load.
#   tools/bench/best_of_replay.sh OLD/replay_bench NEW/replay_bench [ROUNDS=10] [POLICY=pytorch]
set -euo pipefail
old=$1 new=$2 rounds=${3:-10} policy=${4:-pytorch}
events=302078  # alloc + free_completed events of gpt2_generate.default
fastest() {  # the fastest CPU time (ms) of 5 repetitions
  "$1" --benchmark_filter="Gpt2Generate/${policy}\$" --benchmark_repetitions=5 --benchmark_min_time=0.05 \
    --benchmark_format=json 2>/dev/null | python3 -c '
import json, sys
runs = [b for b in json.load(sys.stdin)["benchmarks"] if b.get("run_type") == "iteration"]
print(min(b["cpu_time"] for b in runs))'
}
echo "# $(date -u +%FT%TZ) $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); policy $policy"
echo "# round: fastest CPU ms of old, new"
for r in $(seq "$rounds"); do echo "$r $(fastest "$old") $(fastest "$new")"; done | awk -v events="$events" '
  { print; if (NR == 1 || $2 < old) old = $2; if (NR == 1 || $3 < new) new = $3 }
  END { printf "# fastest: old %.2f ms = %.2f M events/s, new %.2f ms = %.2f M events/s (new/old time %.3f)\n",
        old, events / old / 1000, new, events / new / 1000, new / old }'
