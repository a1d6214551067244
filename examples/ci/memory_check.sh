#!/usr/bin/env bash
# The memory regression check of examples/ci/github-workflow.yml, as one script so that CI and
# tests/cli/ci_example_test.cpp run the same steps:
#   memory_check.sh MEMREPLAY INPUT BASELINE OUTDIR
# imports INPUT (a PyTorch snapshot, or an .mrt from `memreplay record`) as OUTDIR/run.mrt, then
# checks it, under the name $MEMREPLAY_TRACE_NAME (default: run), against BASELINE for the
# policies in $MEMREPLAY_POLICIES (default: pytorch and pytorch:expandable_segments:True),
# writing OUTDIR/memory-check.xml (JUnit) and .md (for the pull request) whatever the outcome.
# UPDATE_BASELINE=1 rewrites BASELINE instead (ACCEPT=1: changes beyond a tolerance too);
# $MEMREPLAY_CHECK_ARGS is passed on (e.g. --allow-new). Exit status: memreplay check's (0 pass,
# 1 regression, 2 bad input).
set -uo pipefail
memreplay=$1 input=$2 baseline=$3 out=$4
policies=${MEMREPLAY_POLICIES:-"pytorch pytorch:expandable_segments:True"}
name=${MEMREPLAY_TRACE_NAME:-run}
mkdir -p "$out"
rm -f "$out/run.mrt"
case "$input" in
  *.mrt) cp "$input" "$out/run.mrt" ;;
  # A failed import leaves no run.mrt: the check below then reports the missing trace (exit 2).
  *) "$memreplay" import "$input" -o "$out/run.mrt" >/dev/null ;;
esac
args=()
for p in $policies; do args+=(--policy "$p"); done
if [ "${UPDATE_BASELINE:-0}" = 1 ]; then args+=(--update-baseline); fi
if [ "${ACCEPT:-0}" = 1 ]; then args+=(--accept); fi
# shellcheck disable=SC2206  # extra arguments, split as words on purpose
args+=(${MEMREPLAY_CHECK_ARGS:-})
"$memreplay" check "$name=$out/run.mrt" "${args[@]}" --baseline "$baseline" \
  --junit "$out/memory-check.xml" --markdown "$out/memory-check.md"
