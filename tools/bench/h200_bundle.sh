#!/usr/bin/env bash
# Packs two builds' benchmark binaries (policy_bench, replay_bench, memreplay) for the lent GPU
# host's CPU, which has none of our libraries: BUNDLE/{base,new}/ with the stripped binaries,
# BUNDLE/deps/ with every shared library they load but glibc's own, the benchmark scripts and the
# gpt2_generate snapshot. BUNDLE/run.sh (written by the caller) then compares them there.
#   tools/bench/h200_bundle.sh BASE_TOOLS_DIR NEW_TOOLS_DIR BUNDLE
set -euo pipefail
base=$1
new=$2
bundle=$3
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$bundle/deps"
for side in base new; do
  dir=$base
  [ "$side" = new ] && dir=$new
  mkdir -p "$bundle/$side"
  for tool in policy_bench replay_bench memreplay; do
    strip -o "$bundle/$side/$tool" "$dir/$tool"
    ldd "$dir/$tool" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | while read -r lib; do
      case "$(basename "$lib")" in
        libc.so.* | libm.so.* | libgcc_s.so.* | libpthread.so.* | libdl.so.* | librt.so.* | ld-linux*) ;;
        *) cp -L "$lib" "$bundle/deps/" ;;
      esac
    done
  done
done
cp "$here/best_of_policies.sh" "$here/best_of_replay.sh" "$here/import_vs_python.sh" \
  "$here/../make_big_snapshot.py" "$here/../../../shared/traces/gpt2_generate.default.pickle.xz" "$bundle/"
echo "bundle: $bundle ($(du -sh "$bundle" | cut -f1))"
