#!/usr/bin/env bash
# Packs two builds' benchmark binaries (policy_bench, memreplay) for the lent GPU host's CPU, which
# has none of our libraries: BUNDLE/{base,new}/ with the stripped binaries and lib/ with every
# shared library they load but glibc's own (each side its own libmemreplay_policies.so: a build's
# binaries find their library through RUNPATH, which LD_LIBRARY_PATH overrides), wrappers
# BUNDLE/{base,new}-{policy_bench,memreplay}, the import benchmark script and the gpt2_generate snapshot.
#   tools/bench/h200_bundle.sh BASE_BIN_DIR BASE_LIB_DIR NEW_BIN_DIR NEW_LIB_DIR BUNDLE
# (a build's BIN_DIR is build/tools, its LIB_DIR build/policies). BUNDLE/run.sh, the caller's,
# then compares them there; the wrappers resolve their paths at run time.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bundle=$5
pack_side() {  # side bin_dir lib_dir
  for tool in policy_bench memreplay; do
    LD_LIBRARY_PATH=$3 "$here/../gpu/pack_with_libs.sh" "$2/$tool" "$bundle/$1" "$bundle/$1/lib"
    printf '#!/bin/bash\nd=$(cd "$(dirname "$0")" && pwd)/%s\nLD_LIBRARY_PATH=$d/lib exec $d/%s "$@"\n' \
      "$1" "$tool" >"$bundle/$1-$tool"
    chmod +x "$bundle/$1-$tool"
  done
}
abs() { (cd "$1" && pwd); }
pack_side base "$(abs "$1")" "$(abs "$2")"
pack_side new "$(abs "$3")" "$(abs "$4")"
cp "$here/import_vs_python.sh" "$here/make_big_snapshot.py" \
  "$here/../../tests/data/real/traces/gpt2_generate.default.pickle.xz" "$bundle/"
echo "bundle: $bundle ($(du -sh "$bundle" | cut -f1))"
