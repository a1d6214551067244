#!/usr/bin/env bash
# Where a live policy's step time goes (tools/gpu/live_overhead_job.py says what each run
# measures): each workload under native, native expandable_segments and the policies of
# LIVE_POLICIES (default "memreplay bfc:allow_growth:True"), each in a process of its own, the
# whole set repeated LIVE_REPEATS times (default 3) in turn, so that each policy run has a native run
# beside it in time. Prepared as tools/gpu/live_policy_check.sh --prepare, carried the same way.
#   OUT=results tools/gpu/live_overhead_check.sh BUILD [WORKLOAD...]   (default: gpt resnet18 vit_infer)
# About 12 s a run: 2 workloads x 4 allocators x 3 repeats is 5 minutes. Output in $OUT:
# live_overhead.md and .json (the table, per-step times, host time by operator), runs_and_logs.tar.gz
# (each run's figures and log, and the trace each policy run recorded).
set -uo pipefail
cd "$(dirname "$0")/../.."
build=${1:?usage: OUT=DIR $0 BUILD [WORKLOAD...]}
shift
out=${OUT:?set OUT to the results folder}
workloads=("$@")
[ ${#workloads[@]} -gt 0 ] || workloads=(gpt resnet18 vit_infer)
work=$(mktemp -d /tmp/memreplay-overhead.XXXXXX)
mkdir -p "$work/runs" "$work/logs" "$out"
source tools/gpu/live_env.sh
live_env "$build" "$work"
job="$PWD/tools/gpu/live_overhead_job.py"
read -r -a policies <<<"${LIVE_POLICIES:-memreplay bfc:allow_growth:True}"
live_extension "$work/logs/extension.log" ||
  echo "the extension did not build (logs/extension.log)"
status=0
for repeat in $(seq 1 "${LIVE_REPEATS:-3}"); do
  for workload in "${workloads[@]}"; do
    for allocator in native native_expandable "${policies[@]/#/policy:}"; do
      tag=$(echo "$allocator" | tr -c 'A-Za-z0-9_\n' '_')
      name="${workload}_${tag}_r${repeat}"
      conf=""
      [ "$allocator" = native_expandable ] && conf=expandable_segments:True
      trace=()
      [[ $allocator == policy:* ]] && trace=("$work/$name.mrt")  # as deployed: the run writes its trace
      echo "[live_overhead] $name"
      if ! PYTORCH_CUDA_ALLOC_CONF=$conf timeout 150 "$python" "$job" run "$workload" "$allocator" \
        "$work/runs/$name.json" "${trace[@]}" >"$work/logs/$name.log" 2>&1; then
        echo "[live_overhead] $name FAILED: $(tail -1 "$work/logs/$name.log")"
        status=1
      fi
    done
  done
done
"$python" "$job" report "$work/runs" "$out" || status=1
# The policy runs' own traces too: a replay of one shows where its device calls came.
tar -czf "$out/runs_and_logs.tar.gz" -C "$work" runs logs $(cd "$work" && ls -- *.mrt 2>/dev/null)
exit $status
