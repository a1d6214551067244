#!/bin/bash
# Here, after building: packs what run.sh needs into OUT (carried to the H200 host by the lead):
# base/ and new/ (policy_bench with the libmemreplay_policies.so it was built with), deps/ (the
# shared libraries they need beyond the system core), the trace and best_of_policies.sh.
#   pack.sh BASE_BIN_DIR BASE_LIB_DIR NEW_BUILD OUT
#   e.g. pack.sh /work/s6-base-h1/bin /work/s6-base-h1/lib build build/h200-async
set -euo pipefail
base_bin=$1 base_lib=$2 new_build=$3 out=$4
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$out"; mkdir -p "$out/base/lib" "$out/new/lib" "$out/deps"
cp "$base_bin/policy_bench" "$out/base/"; cp -L "$base_lib/libmemreplay_policies.so" "$out/base/lib/"
cp "$new_build/tools/policy_bench" "$out/new/"; cp -L "$new_build/policies/libmemreplay_policies.so" "$out/new/lib/"
core='^(linux-vdso|ld-linux|libc\.so|libm\.so|libpthread|libdl\.so|librt\.so|libgcc_s|libstdc\+\+|libmemreplay)'
ldd "$out/new/policy_bench" | awk '$3 ~ /^\// { print $1, $3 }' | while read -r name path; do
  [[ $name =~ $core ]] || cp -L "$path" "$out/deps/"
done
cp "$here/run.sh" "$here/../../tools/bench/best_of_policies.sh" /work/shared/traces/gpt2_generate.default.pickle.xz "$out/"
du -sh "$out"
