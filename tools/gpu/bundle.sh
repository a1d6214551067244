#!/usr/bin/env bash
# Packs what tools/gpu/record_check.sh needs from a build into one small folder to carry to the
# GPU machine (Ubuntu 24.04): BUILD/gpu-bundle/{bin,lib,deps}.
#   bin/   memreplay, record_bench, interposer_bench (tools/bench/interposer_ab.sh)
#   lib/   libmemreplay_record.so, libmemreplay_interposer.so (self-contained: need only glibc);
#          fake_cuda/ (the fake libcudart.so.13 and libcuda.so.1 of tests/fake_cuda, for
#          interposer_ab.sh --fake); cudart/ (the libcudart.so.13 interposer_bench was linked
#          against, this machine's CUDA 13 toolkit: interposer_ab.sh --real runs it, whatever CUDA
#          runtime the GPU machine has or lacks)
#   deps/  the shared libraries bin/ needs beyond glibc and the C++ runtime (protobuf, abseil,
#          benchmark, ...): Ubuntu's differ in version or name. record_check.sh puts deps/ on
#          the library path of our own binaries only, never of Python.
# Usage (here, after building):  tools/gpu/bundle.sh [BUILD]   (default build)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
bundle="$build/gpu-bundle"
rm -rf "$bundle"
mkdir -p "$bundle/bin" "$bundle/lib" "$bundle/deps"

cp "$build/tools/memreplay" "$build/tools/record_bench" "$bundle/bin/"
if [[ -f "$build/tools/interposer_bench" && -f "$build/tests/fake_cuda/libcudart.so.13" ]]; then
  cp "$build/tools/interposer_bench" "$bundle/bin/"
  mkdir -p "$bundle/lib/fake_cuda" "$bundle/lib/cudart"
  cp -L "$build/tests/fake_cuda/libcudart.so.13" "$build/tests/fake_cuda/libcuda.so.1" "$bundle/lib/fake_cuda/"
  cp -L "$(ldd "$build/tools/interposer_bench" | awk '$1 == "libcudart.so.13" { print $3 }')" "$bundle/lib/cudart/"
else
  echo "warning: no interposer_bench or fake CUDA libraries in $build (ninja -C $build interposer_bench" \
    "memreplay_fake_cudart memreplay_fake_cuda; they need the CUDA toolkit)" >&2
fi
cp "$build/recorder/live/libmemreplay_record.so" "$bundle/lib/"
if [[ -f "$build/recorder/interposer/libmemreplay_interposer.so" ]]; then
  cp "$build/recorder/interposer/libmemreplay_interposer.so" "$bundle/lib/"
else
  echo "warning: no interposer in $build (built without the CUDA toolkit?)" >&2
fi

# Everything ldd resolves except the system core every Linux has (newer there than here) and the
# CUDA runtime (lib/cudart/ above).
core='^(linux-vdso|ld-linux|libc\.so|libm\.so|libpthread|libdl\.so|librt\.so|libgcc_s|libstdc\+\+|libcudart)'
for binary in "$bundle"/bin/*; do
  ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' | while read -r name path; do
    [[ "$name" =~ $core ]] || cp -L "$path" "$bundle/deps/$name"
  done
done
du -sh "$bundle" "$bundle"/*
echo "carry: $bundle   run there: tools/gpu/record_check.sh $bundle"
