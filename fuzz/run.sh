#!/usr/bin/env bash
# Runs the libFuzzer targets of a MEMREPLAY_FUZZ=ON build over their committed seed corpora.
#   fuzz/run.sh BUILD_DIR SECONDS [TARGET...]     each target for SECONDS (the CI's short pass)
#   RUNS=10000000 fuzz/run.sh BUILD_DIR 0 TARGET  a campaign of RUNS executions (SECONDS 0: no
#                                                 time limit; else whichever comes first)
# New inputs go to a scratch corpus (the committed seeds stay as they are); a crash, leak,
# sanitizer report, timeout (10 s) or more than 2 GiB of memory fails the run, leaving the input
# that did it in BUILD_DIR/fuzz-artifacts/. Prints each target's executions and executions/s.
set -euo pipefail
build=$1
seconds=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(unpickle_fuzz snapshot_import_fuzz rmm_import_fuzz decompress_fuzz compressed_import_fuzz
           trace_reader_fuzz chunk_decoder_fuzz policy_options_fuzz import_ahead_fuzz one_pass_dict_fuzz
           baseline_reader_fuzz plugin_boundary_fuzz)
fi
mkdir -p "$build/fuzz-artifacts"
for target in "${targets[@]}"; do
  seeds="$here/corpus/$target"
  [ -d "$seeds" ] || { echo "fuzz/run.sh: no seed corpus $seeds" >&2; exit 1; }
  scratch="$build/fuzz-corpus/$target"
  mkdir -p "$scratch"
  limit=(-max_total_time="$seconds")
  if [ -n "${RUNS:-}" ]; then limit+=(-runs="$RUNS"); fi
  log="$build/fuzz-artifacts/$target.log"
  if ! "$build/fuzz/$target" "${limit[@]}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$build/fuzz-artifacts/$target-" "$scratch" "$seeds" >"$log" 2>&1; then
    tail -n 60 "$log" >&2
    echo "fuzz/run.sh: $target FAILED (log: $log)" >&2
    exit 1
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  echo "$target: ${runs:-?} executions, ${rate:-?} exec/s, no crash, leak or timeout"
done
