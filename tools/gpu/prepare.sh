#!/usr/bin/env bash
# Prepares a build for tools/gpu/check.sh on the lent GPU machine (docs/gpu-machine.md). Run HERE, from
# anywhere in the checkout:
#   tools/gpu/prepare.sh [BUILD_DIR]      (default: build)
# It configures BUILD_DIR with MEMREPLAY_PORTABLE=ON, builds the three programs the check runs,
# imports every tests/data/real/traces/*.pickle.xz into BUILD_DIR/gpu-traces/NAME.mrt (shared/ does not
# travel), copies the shared libraries those programs need beyond glibc into BUILD_DIR/gpu-libs,
# records the commit in BUILD_DIR/gpu-commit, and prints the `carry` list for the device tool.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
shared=${MEMREPLAY_REAL_DATA_DIR:-tests/data/real}

# Tests and benchmarks named on: tools/gpu/policies.sh --prepare may share BUILD_DIR and turns them off.
cmake -S . -B "$build" -G Ninja -DMEMREPLAY_PORTABLE=ON -DMEMREPLAY_BUILD_TESTS=ON -DMEMREPLAY_BUILD_BENCHMARKS=ON >/dev/null
ninja -C "$build" memreplay memreplay_tests gpu_replay_bench >/dev/null
programs=("$build/tools/memreplay" "$build/tests/memreplay_tests" "$build/tools/gpu_replay_bench")

rm -rf "$build/gpu-traces" "$build/gpu-libs"
mkdir -p "$build/gpu-traces" "$build/gpu-libs"
for snapshot in "$shared"/traces/*.pickle.xz; do
  name=$(basename "$snapshot" .pickle.xz)
  "$build/tools/memreplay" import "$snapshot" -o "$build/gpu-traces/$name.mrt" >/dev/null
done

# Libraries beyond glibc and the driver: the GPU machine (Ubuntu 24.04) may not have them.
for program in "${programs[@]}"; do
  ldd "$program" | awk '/=> \// {print $3}'
done | sort -u | while read -r library; do
  case $(basename "$library") in
    libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|ld-linux*|libcuda.so*) ;;
    *) cp -L "$library" "$build/gpu-libs/" ;;
  esac
done

commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then commit="$commit-dirty"; fi
echo "$commit" >"$build/gpu-commit"

carry=("${programs[@]}" "$build/gpu-traces" "$build/gpu-libs" "$build/gpu-commit")
du -shc "${carry[@]}"
total=$(du -scb "${carry[@]}" | tail -1 | cut -f1)
if [ "$total" -gt $((56 * 1024 * 1024)) ]; then
  echo "gpu_prepare: ${total} bytes to carry: over budget (64 MiB with the working tree)" >&2
  exit 1
fi
printf 'carry: ['
printf '"%s", ' "${carry[@]:0:${#carry[@]}-1}"
printf '"%s"]\n' "${carry[-1]}"
echo "libraries carried: $(ls "$build/gpu-libs" | tr '\n' ' ')"
