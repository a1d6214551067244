#!/usr/bin/env bash
# The memory regression check of examples/ci/github-workflow.yml, as one script so that CI and
# tests/ci_example_test.cpp run the same steps:
#   memory_check.sh MEMREPLAY INPUT BASELINE OUTDIR
# imports INPUT (a PyTorch snapshot, or an .mrt from `memreplay record`) as OUTDIR/run.mrt, then
# checks it against BASELINE for the policies in $MEMREPLAY_POLICIES (default: pytorch and
# pytorch:expandable_segments:True), writing OUTDIR/memory-check.xml (JUnit) and .md (for the
# pull request). Exit status: memreplay check's (0 pass, 1 regression, 2 bad input).
set -uo pipefail
memreplay=$1 input=$2 baseline=$3 out=$4
policies=${MEMREPLAY_POLICIES:-"pytorch pytorch:expandable_segments:True"}
mkdir -p "$out"
case "$input" in
  *.mrt) cp "$input" "$out/run.mrt" ;;
  *) "$memreplay" import "$input" -o "$out/run.mrt" >/dev/null || exit 2 ;;
esac
args=()
for p in $policies; do args+=(--policy "$p"); done
if [ "${UPDATE_BASELINE:-0}" = 1 ]; then args+=(--update-baseline); fi
"$memreplay" check "$out/run.mrt" "${args[@]}" --baseline "$baseline" \
  --junit "$out/memory-check.xml" --markdown "$out/memory-check.md"
