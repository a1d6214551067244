#!/usr/bin/env bash
# `memreplay check` over every trace in DIR × 5 policies, side by side with the same 45 replays run
# one by one as `memreplay replay` processes, alternated for ROUNDS rounds (the target:
# check under 2 s).   tools/bench/check_timing.sh build/tools/memreplay DIR [ROUNDS]
set -euo pipefail
memreplay=$1 dir=$2 rounds=${3:-5}
policies=(pytorch pytorch:expandable_segments:True pytorch:max_split_size_mb:64 pytorch:roundup_power2_divisions:4
          cuda_async)
args=()
for p in "${policies[@]}"; do args+=(--policy "$p"); done
now() { date +%s.%N; }
for ((round = 1; round <= rounds; round++)); do
  start=$(now)
  "$memreplay" check "$dir"/*.mrt "${args[@]}" --max-overhead 100 >/dev/null
  middle=$(now)
  for t in "$dir"/*.mrt; do
    for p in "${policies[@]}"; do "$memreplay" replay "$t" --policy "$p" --json - >/dev/null; done
  done
  end=$(now)
  echo "round $round: check $(echo "$middle - $start" | bc) s, the same replays one by one $(echo "$end - $middle" | bc) s"
done
