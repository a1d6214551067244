#!/usr/bin/env bash
# Builds fuzz targets of a source tree and packs them into a bundle for another Linux machine (the
# lent GPU host, which has none of our libraries): the binaries stripped (clang links their
# sanitizer and libFuzzer runtimes in), their seed corpora, lib/ with every shared library they
# load but glibc's own, and the scripts that run them (parallel.sh, campaign.sh).
#   fuzz/bundle.sh TREE BUILD_DIR BUNDLE [TARGET...]   (default target: compressed_import_fuzz)
# BUILD_DIR is configured as fuzz/README.md says (Debian's clang, MEMREPLAY_FUZZ=ON,
# RelWithDebInfo, ASan+UBSan); BUNDLE is emptied first.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tree=$(cd "$1" && pwd)
build=$2
bundle=$3
shift 3
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(compressed_import_fuzz)

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
CC=clang CXX=clang++ cmake -S "$tree" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DMEMREPLAY_FUZZ=ON -DMEMREPLAY_BUILD_TESTS=OFF -DMEMREPLAY_BUILD_BENCHMARKS=OFF "${launcher[@]}" >/dev/null
cmake --build "$build" --target "${targets[@]}"

rm -rf "$bundle"
mkdir -p "$bundle/lib" "$bundle/corpus"
for target in "${targets[@]}"; do
  "$here/../tools/gpu/pack_with_libs.sh" "$build/fuzz/$target" "$bundle" "$bundle/lib"
  cp -r "$tree/fuzz/corpus/$target" "$bundle/corpus/"
done
cp "$tree/fuzz/parallel.sh" "$tree/fuzz/campaign.sh" "$bundle/"
echo "bundle: $bundle ($(du -sh "$bundle" | cut -f1)): ${targets[*]}; lib/: $(ls "$bundle/lib" | tr '\n' ' ')"
