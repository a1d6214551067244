#!/usr/bin/env bash
# `--device cuda:0` against the simulator on every pool replay row, in one call on the lent
# GPU machine (docs/gpu-machine.md), with the folder tools/gpu/pool_prepare.sh made here carried:
#   bash FOLDER/pool_cuda_check.sh FOLDER
# Replays each line of FOLDER/traces/replays.txt (trace, row, policy, cap) with the same binary on
# both devices and writes $OUT/cuda_vs_sim.md (reserved peak, device allocs/frees, retries, OOM
# event) and the JSON of every replay under $OUT/cuda_vs_sim/.
set -uo pipefail
here=${1:?the folder pool_prepare.sh made}
mkdir -p "$OUT/cuda_vs_sim"
nvidia-smi -L || true
while read -r job row policy cap; do
  capacity=()
  [[ "$cap" != 0 ]] && capacity=(--capacity "$cap")
  for device in cuda:0 sim; do
    LD_LIBRARY_PATH="$here/deps" "$here/bin/memreplay" replay "$here/traces/$job.mrt" --policy "$policy" \
      "${capacity[@]}" --device "$device" --json "$OUT/cuda_vs_sim/$row.${device%%:*}.json" >/dev/null \
      2>>"$OUT/cuda_vs_sim/errors.txt"
  done
done <"$here/traces/replays.txt"
python3 - "$here/traces/replays.txt" "$OUT/cuda_vs_sim" >"$OUT/cuda_vs_sim.md" <<'PY'
import json, os, sys
rows = [line.split() for line in open(sys.argv[1]) if line.strip()]
print("| row | policy | cap | reserved peak cuda:0 | sim | device alloc/free cuda:0 | sim | retries cuda:0 / sim | OOM at cuda:0 / sim | agree |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
agree = 0
for job, row, policy, cap in rows:
    try:
        c, s = (json.load(open(os.path.join(sys.argv[2], f"{row}.{d}.json"))) for d in ("cuda", "sim"))
    except (OSError, ValueError) as e:
        print(f"| {row} | `{policy}` | {cap} | missing: {e} | | | | | | no |")
        continue
    keys = ("reserved_peak", "device_alloc_calls", "device_free_calls", "alloc_retries", "oom_at_event")
    same = all(c[k] == s[k] for k in keys)
    agree += same
    print(f"| {row} | `{policy}` | {cap} | {c['reserved_peak']:,} | {s['reserved_peak']:,} | "
          f"{c['device_alloc_calls']}/{c['device_free_calls']} | {s['device_alloc_calls']}/{s['device_free_calls']} | "
          f"{c['alloc_retries']} / {s['alloc_retries']} | {c['oom_at_event']} / {s['oom_at_event']} | {'yes' if same else 'NO'} |")
print(f"\n{agree} of {len(rows)} agree")
PY
tail -1 "$OUT/cuda_vs_sim.md"
