#!/usr/bin/env bash
# Packs what tools/gpu_record_check.sh needs from a build into one small folder to carry to the
# GPU machine (Ubuntu 24.04): BUILD/gpu-bundle/{bin,lib,deps}.
#   bin/   memreplay, record_bench
#   lib/   libmemreplay_record.so, libmemreplay_interposer.so (self-contained: need only glibc)
#   deps/  the shared libraries bin/ needs beyond glibc and the C++ runtime (protobuf, abseil,
#          benchmark, ...): Ubuntu's differ in version or name. gpu_record_check.sh puts deps/ on
#          the library path of our own binaries only, never of Python.
# Usage (here, after building):  tools/gpu_bundle.sh [BUILD]   (default build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
bundle="$build/gpu-bundle"
rm -rf "$bundle"
mkdir -p "$bundle/bin" "$bundle/lib" "$bundle/deps"

cp "$build/tools/memreplay" "$build/tools/record_bench" "$bundle/bin/"
cp "$build/recorder/libmemreplay_record.so" "$bundle/lib/"
if [[ -f "$build/recorder/interposer/libmemreplay_interposer.so" ]]; then
  cp "$build/recorder/interposer/libmemreplay_interposer.so" "$bundle/lib/"
else
  echo "warning: no interposer in $build (built without the CUDA toolkit?)" >&2
fi

# Everything ldd resolves except the system core every Linux has (newer there than here).
core='^(linux-vdso|ld-linux|libc\.so|libm\.so|libpthread|libdl\.so|librt\.so|libgcc_s|libstdc\+\+)'
for binary in "$bundle"/bin/*; do
  ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' | while read -r name path; do
    [[ "$name" =~ $core ]] || cp -L "$path" "$bundle/deps/$name"
  done
done
du -sh "$bundle" "$bundle"/*
echo "carry: $bundle   run there: tools/gpu_record_check.sh $bundle"
