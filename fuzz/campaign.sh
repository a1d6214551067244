#!/usr/bin/env bash
# A fuzz campaign of several targets at once on a many-core machine (the GPU machine has 16
# cores): each target runs in libFuzzer's fork mode with its share of the jobs, for SECONDS, over
# a scratch corpus seeded from fuzz/corpus/<target>. Prints executions, crashes/timeouts/OOMs
# per target from the last fork-mode status line; any crash, leak or timeout leaves its input in
# OUT/artifacts/ and the target's log in OUT/.
#   fuzz/campaign.sh BUNDLE OUT SECONDS target:jobs...
# BUNDLE holds the fuzz binaries (fuzz/*_fuzz of a MEMREPLAY_FUZZ=ON build), corpus/ and, when
# the machine lacks them, lib/ (shared libraries the binaries need; see fuzz/README.md).
set -uo pipefail
bundle=$1
out=$2
seconds=$3
shift 3
mkdir -p "$out/artifacts"
export LD_LIBRARY_PATH="$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
pids=()
for spec in "$@"; do
  target=${spec%%:*}
  jobs=${spec##*:}
  scratch=$(mktemp -d)
  cp -r "$bundle/corpus/$target/." "$scratch/" 2>/dev/null
  "$bundle/$target" -fork="$jobs" -ignore_crashes=0 -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$out/artifacts/$target-" "$scratch" >"$out/$target.log" 2>&1 &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
printf '%-22s %14s %10s %s\n' target executions exec/s 'oom/timeout/crash'
for spec in "$@"; do
  target=${spec%%:*}
  last=$(grep -E '^#[0-9]+:' "$out/$target.log" | tail -n 1)
  runs=$(echo "$last" | sed -E 's/^#([0-9]+):.*/\1/')
  rate=$(echo "$last" | sed -nE 's/.*exec\/s:? ([0-9]+).*/\1/p')
  bad=$(echo "$last" | sed -nE 's/.*oom\/timeout\/crash: ([0-9\/]+).*/\1/p')
  printf '%-22s %14s %10s %s\n' "$target" "${runs:-?}" "${rate:-?}" "${bad:-?}"
done
ls "$out/artifacts" | head -n 20
exit $status
