#!/usr/bin/env bash
# Live policies inside real PyTorch jobs on the GPU (libmemreplay_alloc.so behind
# CUDAPluggableAllocator, memreplay.torch.use_policy): four workloads (a GPT-2-like training loop
# in plain torch, torchvision ResNet-18 training, ViT-B/16 inference at batches 1..32, and CUDA
# graphs: a captured training step and a forward sharing its pool, eager work between the
# replays), LIVE_WORKLOADS to choose, each under
# native, native expandable_segments, and the policies of LIVE_POLICIES (default "memreplay
# bfc:allow_growth:True"),
# every case in a process of its own (one allocator per process). For each policy case:
#   (a) reserved peak and device calls live vs a simulator replay of the trace the run recorded
#       (`memreplay replay TRACE --policy SPEC`): must be equal
#   (b) the per-step losses (inference: output sums) identical to the native allocator's
#   (c) median step time over LIVE_STEPS (default 50) steps after LIVE_WARMUP_STEPS (5), and the
#       warm-up time, beside native's
#   (d) reserved peak beside native default and native expandable_segments
# and a stream-order test per policy: a long kernel on stream A reads x, x is freed with
# record_stream(A), y is allocated on stream B and overwritten: the reader must see x's values.
#
# Here (the development machine): a portable build and what to carry.
#   tools/gpu/live_policy_check.sh --prepare [BUILD] [PLAIN]  (defaults build-live, build)
# There (torch 2.11, Python 3.12, nvcc for the extension; nothing downloaded), from the repository root:
#   OUT=results tools/gpu/live_policy_check.sh BUILD
# One call of about 4-6 minutes (the extension compiles once, about a minute). A failed case is
# listed and the others still run. Output in $OUT: live_policy.md, live_policy.json, logs/, and
# traces/ (what each policy run recorded).
set -uo pipefail
cd "$(dirname "$0")/../.."

if [ "${1:-}" = --prepare ]; then
  # The CLI and the recorder from a portable build; libmemreplay_alloc.so from a plain one
  # (replayer/live/CMakeLists.txt says why), with the shared libraries it needs beyond the C and
  # C++ runtimes (libmemreplay_policies.so, abseil) copied beside it. Needs patchelf.
  set -e
  build=${2:-build-live}
  plain=${3:-build}
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMEMREPLAY_PORTABLE=ON -DMEMREPLAY_BUILD_TESTS=OFF \
    -DMEMREPLAY_BUILD_BENCHMARKS=OFF -DMEMREPLAY_PYTHON=OFF >/dev/null
  ninja -C "$build" memreplay memreplay_record >/dev/null
  [ -f "$plain/CMakeCache.txt" ] || cmake -S . -B "$plain" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  ninja -C "$plain" memreplay_alloc >/dev/null
  rm -rf "$build/live-libs"
  mkdir -p "$build/live-libs"
  cp -L "$plain/replayer/live/libmemreplay_alloc.so" "$build/live-libs/"
  for program in "$build/tools/memreplay" "$build/recorder/live/libmemreplay_record.so" \
    "$plain/replayer/live/libmemreplay_alloc.so"; do ldd "$program" | awk '/=> \// {print $3}'; done |
    sort -u | while read -r library; do
      case $(basename "$library") in
        libc.so* | libm.so* | libdl.so* | librt.so* | libpthread.so* | ld-linux* | libcuda.so* | libstdc++.so* | \
          libgcc_s.so*) ;;
        *) cp -L "$library" "$build/live-libs/" ;;
      esac
    done
  # Each copied library finds the others beside it (the build's run paths point into this machine).
  for library in "$build"/live-libs/*.so*; do patchelf --set-rpath '$ORIGIN' "$library"; done
  du -shc "$build/tools/memreplay" "$build/recorder/live/libmemreplay_record.so" "$build/live-libs"
  echo "carry: [\"$build/tools/memreplay\", \"$build/recorder/live/libmemreplay_record.so\", \"$build/live-libs\"]"
  exit 0
fi

build=${1:?usage: OUT=DIR $0 BUILD   (or $0 --prepare [BUILD] here)}
out=${OUT:?set OUT to the results folder}
mkdir -p "$out/logs"
work=$(mktemp -d /tmp/memreplay-live-policy.XXXXXX)
results=$work/results
mkdir -p "$results"
: >"$results/errors.txt"
# live-libs goes on the library path of the memreplay CLI only: the jobs keep this machine's own
# zstd and lzma (libmemreplay_alloc.so finds its libraries beside it, through its run path).
cli_libs="$PWD/$build/live-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
source tools/gpu/live_env.sh
live_env "$build" "$work"
memreplay="$PWD/$build/tools/memreplay"
job="$PWD/tools/gpu/live_policy_job.py"
# bfc with allow_growth: by default it takes the whole device at its first request, which on a live
# GPU leaves nothing to the CUDA context and cuBLAS (and lands where the driver lets it: a replay
# on the simulator, whose memory is all free, would take more).
read -r -a policies <<<"${LIVE_POLICIES:-memreplay bfc:allow_growth:True}"
started=$(date +%s)
progress() { echo "[live_policy_check +$(($(date +%s) - started))s] $*"; }

progress "host: $(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null | head -1);" \
  "$("$python" -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__)' 2>&1)"
progress "building the allocator extension against this torch"
if ! live_extension "$out/logs/extension.log"; then
  progress "the extension did not build: $(tail -3 "$out/logs/extension.log" | tr '\n' ' ')"
  echo "extension build failed (logs/extension.log)" >>"$results/errors.txt"
fi

# case NAME TIMEOUT ARGS...: one subprocess; a failure is listed, never fatal.
run_case() {
  local name=$1 limit=$2
  shift 2
  progress "$name"
  if ! timeout "$limit" "$python" "$job" "$@" >"$out/logs/$name.log" 2>&1; then
    progress "$name FAILED: $(tail -2 "$out/logs/$name.log" | tr '\n' ' ')"
    echo "$name: $(tail -1 "$out/logs/$name.log")" >>"$results/errors.txt"
  fi
}

for workload in ${LIVE_WORKLOADS:-gpt resnet18 vit_infer graphs}; do
  run_case "case_${workload}_native" 150 case "$workload" native "$results/case_${workload}_native.json"
  PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True run_case "case_${workload}_native_expandable" 150 \
    case "$workload" native_expandable "$results/case_${workload}_native_expandable.json"
  for policy in "${policies[@]}"; do
    tag=$(echo "$policy" | tr -c 'A-Za-z0-9_\n' '_')
    run_case "case_${workload}_${tag}" 150 case "$workload" "policy:$policy" "$results/case_${workload}_${tag}.json" \
      "$work/${workload}_${tag}.mrt"
  done
done
for policy in "${policies[@]}"; do
  tag=$(echo "$policy" | tr -c 'A-Za-z0-9_\n' '_')
  run_case "stream_${tag}" 60 stream-order "policy:$policy" "$results/stream_${tag}.json"
done

progress "replaying the recorded traces and writing the table"
LD_LIBRARY_PATH="$cli_libs" "$python" "$job" report "$memreplay" "$out" "$results" 2>"$out/logs/report.log"
status=$?
cp "$results"/*.json "$out/logs/" 2>/dev/null
cp "$results/errors.txt" "$out/logs/" 2>/dev/null
# The traces the policy runs recorded, to commit beside the table: a replay of each must give its row.
mkdir -p "$out/traces" && cp "$work"/*.mrt "$out/traces/" 2>/dev/null
progress "done (exit $status): $out/live_policy.md"
exit "$status"
