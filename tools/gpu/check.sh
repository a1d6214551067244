#!/usr/bin/env bash
# Every GPU test and benchmark of memreplay in one call, on the lent GPU machine (docs/gpu-machine.md).
#   here:  tools/gpu/prepare.sh            (portable build, traces imported, libraries gathered)
#   there: tools/gpu/check.sh [BUILD_DIR]  (from the repository root; the device tool sets $OUT)
# Runs the GPU tests (and the pool-model tests beside them), replays every trace of
# BUILD_DIR/gpu-traces on --device cuda:0 and on the simulator (tools/gpu/check.py compares them,
# and cuda_async with the live runs in tools/gpu/check_truth.json), times gpt2_generate with
# gpu_replay_bench, and writes into $OUT: check.json, gpu_check.md (the table printed last),
# gtest.json, bench.json, gpu_check.log. The commit comes from $MEMREPLAY_COMMIT or
# BUILD_DIR/gpu-commit. Exit status 0 when every test passed and every check agreed.
set -uo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
out=${OUT:-$build/gpu-check-out}
mkdir -p "$out"
log=$out/gpu_check.log
: >"$log"
# Of the libraries prepare.sh gathered, only those this machine lacks (libbenchmark, say):
# its own zlib or libstdc++ stay in use for everything else (python3, nvidia-smi).
missing=$(mktemp -d)
ldconfig=$(command -v ldconfig || echo /sbin/ldconfig)
for library in "$build"/gpu-libs/*; do
  [ -e "$library" ] || continue
  "$ldconfig" -p | grep -q "^[[:space:]]*$(basename "$library") " || ln -s "$PWD/$library" "$missing/"
done
echo "libraries taken from $build/gpu-libs: $(ls "$missing" | tr '\n' ' ')" >>"$log"
export LD_LIBRARY_PATH="$missing${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export MEMREPLAY_REPO=$PWD  # where the tests find traces/ here
traces=${MEMREPLAY_GPU_TRACES:-$build/gpu-traces}  # another folder of .mrt files, to check fewer

if ! ls "$traces"/*.mrt >/dev/null 2>&1; then
  if [ -d tests/data/real/traces ]; then  # a build made here without prepare.sh
    mkdir -p "$traces"
    for snapshot in tests/data/real/traces/*.pickle.xz; do
      "$build/tools/memreplay" import "$snapshot" -o "$traces/$(basename "$snapshot" .pickle.xz).mrt" >>"$log" 2>&1
    done
  else
    echo "gpu_check: no traces in $traces and no tests/data/real/traces: run tools/gpu/prepare.sh and carry $traces" >&2
    exit 2
  fi
fi

echo "== tests" | tee -a "$log"
# SimAsyncPoolCalibration needs tests/data/real, which does not travel (it fails without it): the
# local test suite runs it.
MEMREPLAY_GPU_TRACE_DIR=$traces "$build/tests/memreplay_tests" \
  --gtest_filter='CudaDevice*:CudaDeviceRegistry*:*DeviceContract*:*CudaReplay*:SimAsyncPool*:CudaAsyncPolicy*:LatencyHistogram*-SimAsyncPoolCalibration.*' \
  --gtest_output="json:$out/gtest.json" >>"$log" 2>&1
echo "   memreplay_tests exit status $?" | tee -a "$log"

echo "== benchmark" | tee -a "$log"
MEMREPLAY_BENCH_TRACE=$traces/gpt2_generate.default.mrt "$build/tools/gpu_replay_bench" \
  --benchmark_out="$out/bench.json" --benchmark_out_format=json >>"$log" 2>&1
echo "   gpu_replay_bench exit status $?" | tee -a "$log"

echo "== replays and report" | tee -a "$log"
python3 tools/gpu/check.py --build "$build" --traces "$traces" --out "$out" \
  --truth tools/gpu/check_truth.json \
  --commit "${MEMREPLAY_COMMIT:-$(cat "$build/gpu-commit" 2>/dev/null || echo unknown)}" 2>>"$log"
