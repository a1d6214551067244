#!/usr/bin/env bash
# The pool ground truth on the lent GPU machine, in one call (docs/gpu-machine.md). From the
# repository root there, with the folder tools/gpu/pool_prepare.sh made here carried:
#   bash FOLDER/pool_capture.sh [--fresh]
# 1. builds the memreplay.torch tracker against the machine's torch (from FOLDER/src);
# 2. tools/gpu/pool_jobs.py: PyTorch's own replays of every pool job under the seven configs
#    (and the capped job's cap), with empty_cache where the job called it; with the tracker, each job
#    recorded again by memreplay.torch (JOB.live.mrt, JOB.mrtlive.json). The jobs' snapshots are
#    FOLDER/pools' unless --fresh (then the jobs run again, and the capped job's cap is probed anew);
# 3. every replay row again with our pytorch policy on --device cuda:0 and on the simulator.
# Writes $OUT/pool_truth.tar.gz and $OUT/summary.txt.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/pools.XXXXXX)
nvidia-smi -L || true
python3 -c "import torch; print('torch', torch.__version__)"
export PYTHONPATH="$here/src/python${PYTHONPATH:+:$PYTHONPATH}"
export MEMREPLAY_RECORD_LIB="$here/lib/libmemreplay_record.so" MEMREPLAY_SOURCE_DIR="$here/src"
export TORCH_EXTENSIONS_DIR="$work/torch_extensions"
live=()
if python3 -m memreplay.torch build >"$work/tracker_build.log" 2>&1; then
  live=(--live)
else
  echo "the memreplay.torch tracker did not build:"; tail -30 "$work/tracker_build.log"
fi
reuse=(--reuse "$here/pools")
[[ "${1:-}" == "--fresh" ]] && reuse=()
# PyTorch's replays first, then the live recordings (each stage's results are packed as it ends, so a
# call cut short still brings back what was done).
mkdir -p "$work/cuda_vs_sim"
pack() { tar czf "$OUT/pool_truth.tar.gz" -C "$work" pools cuda_vs_sim 2>/dev/null; }

PYTHONUNBUFFERED=1 python3 "$here/pool_jobs.py" --out "$work/pools" "${reuse[@]}"
status=$?
cp "$work/pools/summary.txt" "$OUT/summary.txt" 2>/dev/null
pack
if [[ ${#live[@]} -gt 0 ]]; then
  PYTHONUNBUFFERED=1 python3 "$here/pool_jobs.py" --out "$work/live" "${reuse[@]}" --live --no-replay
  mkdir -p "$work/pools/live"
  cp "$work"/live/*.live.mrt "$work"/live/*.mrtlive.json "$work"/live/summary_live.txt "$work/pools/live/" 2>/dev/null
  pack
fi


if [[ -x "$here/bin/memreplay" ]]; then
  while read -r job row policy cap; do
    capacity=()
    [[ "$cap" != 0 ]] && capacity=(--capacity "$cap")
    for device in cuda:0; do
      LD_LIBRARY_PATH="$here/deps" "$here/bin/memreplay" replay "$here/traces/$job.mrt" --policy "$policy" \
        "${capacity[@]}" --device "$device" --json "$work/cuda_vs_sim/$row.${device%%:*}.json" >/dev/null 2>>"$work/cuda_vs_sim/errors.txt"
    done
  done <"$here/traces/replays.txt"
  ls "$work/cuda_vs_sim" | wc -l
fi
cp "$work/tracker_build.log" "$work/pools/" 2>/dev/null
pack
ls -la "$OUT"
exit $status
