#!/usr/bin/env bash
# Replay speed of every registered policy on gpt2_generate, two builds of policy_bench alternating
# ROUNDS times (each run 3 repetitions of every BM_Policy/*). A shared VM's speed swings, and
# contention only adds time, so each build's fastest repetition per policy over all rounds is the
# closest to the code's own speed; the median of the per-round fastest says what a typical run sees.
#   tools/bench/best_of_policies.sh OLD/policy_bench NEW/policy_bench [ROUNDS=5]
set -euo pipefail
old=$1 new=$2 rounds=${3:-5}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "# $(date -u +%FT%TZ) $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$rounds"); do
  for build in old new; do
    "${!build}" --benchmark_filter='BM_Policy/' --benchmark_repetitions=3 --benchmark_min_time=0.05 \
      --benchmark_format=json >"$out/$build.$r.json" 2>/dev/null
  done
done
python3 - "$out" "$rounds" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def per_round(build):  # policy -> [fastest items/s of each round]
    rates = {}
    for r in range(1, rounds + 1):
        best = {}
        for b in json.load(open(f"{out}/{build}.{r}.json"))["benchmarks"]:
            if b.get("run_type") != "iteration": continue
            name = b["run_name"].removeprefix("BM_Policy/")
            best[name] = max(best.get(name, 0), b["items_per_second"])
        for name, rate in best.items(): rates.setdefault(name, []).append(rate)
    return rates
old, new = per_round("old"), per_round("new")
print(f"# M events/s over {rounds} alternating rounds: fastest (median of the rounds' fastest)")
print(f"{'policy':<26}{'old':>18}{'new':>18}")
for name in sorted(new, key=lambda n: -max(new[n])):
    o = old.get(name)
    fo = f"{max(o)/1e6:6.2f} ({statistics.median(o)/1e6:5.2f})" if o else "-"
    print(f"{name:<26}{fo:>18}{max(new[name])/1e6:8.2f} ({statistics.median(new[name])/1e6:5.2f})")
PY
