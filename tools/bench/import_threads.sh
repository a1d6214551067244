#!/usr/bin/env bash
# CPU time of each thread of `memreplay import F` (perf's task-clock, one sample per 0.1 ms), ROUNDS
# times (default 5): the importer's own thread, the decoder's (compressed input) and the trace
# writer's. The busiest thread is the import's critical path: its wall time on a machine with a
# free core for each, whatever else loads this one (wall under load measures the scheduler).
#   tools/bench/import_threads.sh build/tools/memreplay FILE [ROUNDS]
set -euo pipefail
memreplay=$1 file=$2 rounds=${3:-5}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for ((i = 1; i <= rounds; i++)); do
  perf record -q -e task-clock -c 100000 -o "$out/perf.data" "$memreplay" import "$file" -o "$out/t.mrt" >/dev/null 2>&1
  perf report -i "$out/perf.data" --sort pid --stdio -n 2>/dev/null | grep -E '^ +[0-9]' |
    awk -v round="$i" '{ ms = $2 * 0.1; total += ms; if (ms > busiest) busiest = ms; threads = threads sprintf(" %.0f", ms) }
      END { printf "round %d  threads (ms):%s  total %.0f ms CPU  busiest %.0f ms\n", round, threads, total, busiest }'
done
