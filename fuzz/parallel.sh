#!/usr/bin/env bash
# One target, JOBS independent libFuzzer processes (no fork mode: no job restarts or corpus merges,
# so every second goes to executions), each over its own copy of corpus/<target> with its own
# seed, for SECONDS. Prints each process's executions (libFuzzer's final stats) and their sum;
# any crash, leak, timeout (10 s) or OOM (2 GiB) stops that process and leaves its input in
# OUT/artifacts/, and the script exits 1.
#   fuzz/parallel.sh BUNDLE OUT SECONDS TARGET JOBS
#   RUNS=N fuzz/parallel.sh ...   each process also stops after N executions (whichever comes first)
#   SEED_OFFSET=K fuzz/parallel.sh ...   seeds K+1..K+JOBS instead of 1..JOBS (another campaign)
# BUNDLE as for campaign.sh (the binaries, corpus/, lib/).
set -uo pipefail
bundle=$1
out=$2
seconds=$3
target=$4
jobs=$5
mkdir -p "$out/artifacts"
export LD_LIBRARY_PATH="$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
pids=()
for ((j = 1; j <= jobs; j++)); do
  scratch=$(mktemp -d)
  cp -r "$bundle/corpus/$target/." "$scratch/" 2>/dev/null
  limit=(-max_total_time="$seconds")
  if [ -n "${RUNS:-}" ]; then limit+=(-runs="$RUNS"); fi
  "$bundle/$target" -seed="$((${SEED_OFFSET:-0} + j))" "${limit[@]}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$out/artifacts/$target-$j-" "$scratch" >"$out/$target.$j.log" 2>&1 &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
total=0
for ((j = 1; j <= jobs; j++)); do
  runs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+).*/\1/p' "$out/$target.$j.log" | tail -n 1)
  echo "$target job $j: ${runs:-?} executions"
  total=$((total + ${runs:-0}))
done
echo "$target: $total executions in $jobs jobs x $seconds s, exit status $status"
ls "$out/artifacts" | head -n 20
exit $status
