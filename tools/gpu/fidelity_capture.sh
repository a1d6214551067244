#!/usr/bin/env bash
# Ground truth for the fidelity classes on the GPU machine (docs/fidelity.md): CUDA graphs in one
# shared pool with eager work between captures (kept, and released before the snapshot),
# torch.compile training, a capped run without stacks, and the workloads the cudaMallocAsync
# model is checked on; plus the CuPy and JAX guides of docs/recording.md.
#
# Here (the development machine): the portable build of live_policy_check.sh and the interposer.
#   tools/gpu/fidelity_capture.sh --prepare [BUILD]       (default build-live)
# There (torch 2.11, CuPy, JAX; nothing downloaded), from the repository root, one or more stages:
#   OUT=results tools/gpu/fidelity_capture.sh BUILD STAGE...
#     jobs        tools/gpu/pool_jobs.py on the new jobs: snapshots, the job's own counters, each
#                 job again under backend:cudaMallocAsync, PyTorch's replays under the seven
#                 configs ($OUT/pools)
#     live        the same jobs recorded by memreplay.torch (needs the jobs stage's $OUT/pools)
#     cuda        every snapshot and live trace replayed with the pytorch policy on cuda:0 and on
#                 the simulator ($OUT/cuda_vs_sim)
#     policy-traces  the three workloads of live_policy_job.py under memreplay.torch.use_policy
#                 ("memreplay"), each recording its trace ($OUT/policy_traces): the input for
#                 studying the policy's device calls in steady state on the development machine
#     frameworks  CuPy without its pool and JAX with the platform allocator under `memreplay
#                 record --malloc-as alloc`, CuPy's pool and JAX's BFC allocator under plain
#                 `memreplay record`, then `info --json` and a replay of each ($OUT/frameworks)
#     rows        PyTorch's replays of the committed snapshots of FIDELITY_ROW_JOBS under the seven
#                 configs (tools/gpu/pool_jobs.py --reuse tests/data/pools: $OUT/rows)
set -uo pipefail
cd "$(dirname "$0")/../.."
JOBS=${FIDELITY_JOBS:-graphs_eager_between,graphs_pool_released,compile_default_training,capped_varlen,models_in_turn,varlen_checkpointing,varres_fcn}

if [ "${1:-}" = --prepare ]; then
  set -e
  build=${2:-build-live}
  tools/gpu/live_policy_check.sh --prepare "$build" build
  ninja -C "$build" memreplay_interposer >/dev/null
  echo "carry: [\"$build/tools/memreplay\", \"$build/recorder/live/libmemreplay_record.so\"," \
    "\"$build/recorder/interposer/libmemreplay_interposer.so\", \"$build/live-libs\"]"
  exit 0
fi

build=${1:?usage: OUT=DIR $0 BUILD STAGE...   (or $0 --prepare [BUILD] here)}
shift
out=${OUT:?set OUT to the results folder}
mkdir -p "$out"
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
export MEMREPLAY_RECORD_LIB="$PWD/$build/recorder/live/libmemreplay_record.so" MEMREPLAY_SOURCE_DIR="$PWD"
export TORCH_EXTENSIONS_DIR=/tmp/memreplay-torch-extensions
memreplay() { LD_LIBRARY_PATH="$PWD/$build/live-libs" "$PWD/$build/tools/memreplay" "$@"; }
started=$(date +%s)
progress() { echo "[fidelity_capture +$(($(date +%s) - started))s] $*"; }
progress "host: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -1)"

for stage in "$@"; do
  case $stage in
    jobs)
      progress "jobs: $JOBS"
      PYTHONUNBUFFERED=1 python3 tools/gpu/pool_jobs.py --out "$out/pools" --jobs "$JOBS" --parallel 4 --async-runs \
        >"$out/jobs.log" 2>&1 || progress "pool_jobs.py exited $?"
      tail -40 "$out/jobs.log"
      ;;
    live)
      progress "live recordings"
      python3 -m memreplay.torch build >"$out/tracker_build.log" 2>&1 || { progress "tracker build failed"; tail -5 "$out/tracker_build.log"; }
      PYTHONUNBUFFERED=1 python3 tools/gpu/pool_jobs.py --out "$out/live" --jobs "$JOBS" --parallel 4 \
        --reuse "$out/pools" --live --no-replay >"$out/live.log" 2>&1 || progress "live recording exited $?"
      grep "memreplay.torch run\|FAILED\|failed" "$out/live.log"
      mkdir -p "$out/pools/live"
      cp "$out"/live/*.live.mrt "$out"/live/*.mrtlive.json "$out/pools/live/" 2>/dev/null
      rm -rf "$out/live"
      ;;
    cuda)
      progress "cuda:0 and simulator replays"
      mkdir -p "$out/cuda_vs_sim"
      for snapshot in "$out"/pools/*.pickle.xz; do
        job=$(basename "$snapshot" .pickle.xz)
        cap=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(int(d['cap']*d['total_memory']) if d['cap'] else 0)" "$out/pools/$job.live.json")
        capacity=()
        [ "$cap" != 0 ] && capacity=(--capacity "$cap")
        memreplay import "$snapshot" -o "$out/cuda_vs_sim/$job.mrt" >/dev/null 2>>"$out/cuda_vs_sim/errors.txt"
        for trace in "$out/cuda_vs_sim/$job.mrt" "$out/pools/live/$job.live.mrt"; do
          [ -f "$trace" ] || continue
          tag=$(basename "$trace" .mrt)
          for device in cuda:0 sim; do
            memreplay replay "$trace" --policy pytorch "${capacity[@]}" --device "$device" \
              --json "$out/cuda_vs_sim/$tag.${device%%:*}.json" >/dev/null 2>>"$out/cuda_vs_sim/errors.txt"
          done
        done
      done
      rm -f "$out"/cuda_vs_sim/*.mrt
      ls "$out/cuda_vs_sim" | wc -l
      ;;
    policy-traces)
      progress "policy traces"
      mkdir -p "$out/policy_traces"
      export MEMREPLAY_ALLOC_LIB="$PWD/$build/live-libs/libmemreplay_alloc.so" CUBLAS_WORKSPACE_CONFIG=:4096:8
      for workload in gpt resnet18 vit_infer; do
        timeout 240 python3 tools/gpu/live_policy_job.py case "$workload" policy:memreplay \
          "$out/policy_traces/$workload.json" "$out/policy_traces/$workload.mrt" >"$out/policy_traces/$workload.log" 2>&1
        progress "$workload: exit $? $(tail -1 "$out/policy_traces/$workload.log")"
      done
      ;;
    frameworks)
      progress "frameworks"
      fw=$out/frameworks
      mkdir -p "$fw"
      record() {  # NAME MALLOC_AS ENV...: one job under the interposer, then info and a replay of its trace
        local name=$1 malloc_as=$2
        shift 2
        env "$@" "$PWD/$build/tools/memreplay" record --malloc-as "$malloc_as" -o "$fw/$name.mrt" -- \
          python3 tools/gpu/frameworks_job.py "${name%%.*}" "$fw/$name.job.json" >"$fw/$name.record.log" 2>&1
        echo "$name: record exit $?"
        memreplay info "$fw/$name.mrt" --json >"$fw/$name.info.json" 2>"$fw/$name.info.err"
        memreplay info "$fw/$name.mrt" >"$fw/$name.info.txt" 2>&1
        memreplay replay "$fw/$name.mrt" --policy pytorch --json "$fw/$name.replay.json" >"$fw/$name.replay.txt" 2>&1
        echo "$name: replay exit $?"
      }
      libs=LD_LIBRARY_PATH="$PWD/$build/live-libs"
      # The guides' recipes: per-buffer allocators with --malloc-as alloc, pools as they are.
      record cupy-plain alloc "$libs"
      record cupy-pool segment "$libs"
      record jax.platform alloc XLA_PYTHON_CLIENT_ALLOCATOR=platform XLA_PYTHON_CLIENT_PREALLOCATE=false "$libs"
      record jax.default segment XLA_PYTHON_CLIENT_PREALLOCATE=false "$libs"
      for f in "$fw"/*.info.txt; do echo "== $f"; head -30 "$f"; done
      ;;
    rows)
      progress "replay rows: ${FIDELITY_ROW_JOBS:-models_in_turn}"
      PYTHONUNBUFFERED=1 python3 tools/gpu/pool_jobs.py --out "$out/rows" --jobs "${FIDELITY_ROW_JOBS:-models_in_turn}" \
        --reuse tests/data/pools --parallel 4 >"$out/rows.log" 2>&1 || progress "rows exited $?"
      grep "^replay" "$out/rows.log" | cut -c1-200
      ;;
    *) echo "unknown stage: $stage" >&2 ;;
  esac
done
progress "done"
