#!/usr/bin/env bash
# Packs one binary for another Linux machine (the lent GPU host) that has none of our libraries:
# the binary, stripped, into DEST_DIR, and every shared library the loader resolves for it, but
# glibc's own (the host has those), into LIB_DIR. The caller's LD_LIBRARY_PATH, if any, is the one
# the loader searches, as when the binary runs.
#   tools/gpu/pack_with_libs.sh BINARY DEST_DIR LIB_DIR
# Used by tools/bench/h200_bundle.sh and fuzz/bundle.sh.
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 BINARY DEST_DIR LIB_DIR" >&2; exit 2; }
binary=$1
dest=$2
lib_dir=$3
mkdir -p "$dest" "$lib_dir"
strip -o "$dest/$(basename "$binary")" "$binary"
ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so.* | libm.so.* | libgcc_s.so.* | libpthread.so.* | libdl.so.* | librt.so.* | ld-linux*) ;;
    *) cp -L "$lib" "$lib_dir/" ;;
  esac
done
