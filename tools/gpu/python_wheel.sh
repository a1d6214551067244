#!/usr/bin/env bash
# A wheel of the memreplay package for the GPU machine's Python (3.12, with torch and pybind11 from
# pip; no network, none of memreplay's build dependencies). Two steps:
#
#   HERE (Debian, after building):   tools/gpu/python_wheel.sh --prepare [BUILD]     (default build)
#     packs BUILD/python-kit: the C++ libraries (position-independent static archives,
#     libmemreplay_policies.so), the CLI and libmemreplay_record.so, the shared libraries they need
#     beyond glibc and the C++ runtime, and the third-party headers the bindings include. Prints
#     the `carry` list for the device tool.
#   THERE (the GPU machine):          tools/gpu/python_wheel.sh [KIT]     (default build/python-kit)
#     compiles python/src/*.cpp against that python3 and its pybind11 and links them with the kit
#     into memreplay._core, builds the wheel (pip wheel ., MEMREPLAY_PACKAGE_FILES: nothing else is
#     compiled), installs it into a fresh venv beside the machine's packages and checks it: the
#     module replays a real trace, the `memreplay` command runs, memreplay.torch imports.
#     The wheel and the log go to $OUT (default out/python_wheel).
set -euo pipefail
cd "$(dirname "$0")/../.."

prepare() {
  local build=${1:-build} kit
  kit="$build/python-kit"
  [[ -f "$build/python/package_files.txt" ]] || { echo "$build: no Python module configured (pybind11-dev)" >&2; exit 1; }
  ninja -C "$build" memreplay memreplay_record memreplay_python memreplay_import memreplay_replayer memreplay_results \
    >/dev/null
  rm -rf "$kit"
  mkdir -p "$kit"/{lib,bin,deps,include}
  # Every static archive the module is linked with here (ours and zstd's, say), from its link command.
  ninja -C "$build" -t commands memreplay_python | tail -1 | tr ' ' '\n' | grep '\.a$' |
    grep -v -E '/lib(rt|dl|pthread|m|c)\.a$' | while read -r archive; do
    [[ "$archive" = /* ]] || archive="$build/$archive"
    cp "$archive" "$kit/lib/"
  done
  cp "$build/policies/libmemreplay_policies.so" "$build/recorder/live/libmemreplay_record.so" "$kit/lib/"
  cp "$build/tools/memreplay" "$kit/bin/"
  # What the libraries need beyond what every Linux has (the GPU machine's are another distribution's).
  local core='^(linux-vdso|ld-linux|libc\.so|libm\.so|libpthread|libdl\.so|librt\.so|libgcc_s|libstdc\+\+)'
  for binary in "$kit/bin/memreplay" "$kit/lib/libmemreplay_policies.so" "$build/python/"_core*.so; do
    ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' | while read -r name path; do
      [[ "$name" =~ $core || "$name" == libmemreplay_* ]] || cp -L "$path" "$kit/deps/$name"
    done
  done
  # Each finds what it needs beside itself (libabsl_hash needs libabsl_city, say), in the wheel's lib/.
  for dep in "$kit"/deps/*; do patchelf --set-rpath '$ORIGIN' "$dep"; done
  # The headers the bindings include from outside the checkout, but Python's and pybind11's.
  local python_include
  python_include=$(/usr/bin/python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
  g++ -std=c++20 -M -I. -I"$build" -I"$python_include" python/src/*.cpp | tr ' \\' '\n\n' |
    grep '^/usr/include/' | grep -v -e '^/usr/include/python3' -e '^/usr/include/pybind11/' |
    grep -e '/google/protobuf/' -e '/absl/' -e '/nlohmann/' -e 'zstd' -e 'lzma' | sort -u |
    while read -r header; do
      mkdir -p "$kit/include/$(dirname "${header#/usr/include/}")"
      cp "$header" "$kit/include/${header#/usr/include/}"
    done
  mkdir -p "$kit/include/proto"
  cp "$build/proto/trace.pb.h" "$build/proto/version.h" "$kit/include/proto/"
  git rev-parse --short=12 HEAD >"$kit/commit" 2>/dev/null || echo unknown >"$kit/commit"
  du -sh "$kit" "$kit"/*
  echo "carry: [\"$kit\"]   there: tools/gpu/python_wheel.sh $kit"
}

build_there() {
  local kit=${1:-build/python-kit} out=${OUT:-out/python_wheel} python=${PYTHON:-python3} work
  kit=$(realpath "$kit")
  mkdir -p "$out"
  out=$(realpath "$out")
  work=$(mktemp -d /tmp/memreplay-wheel.XXXXXX)
  exec > >(tee "$out/python_wheel.log") 2>&1
  echo "kit of commit $(cat "$kit/commit"), $("$python" --version), pybind11 $("$python" -m pybind11 --version)"
  local compiler=${CXX:-$(command -v g++ || command -v c++)}
  local suffix includes
  suffix=$("$python" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
  includes=$("$python" -m pybind11 --includes)
  # shellcheck disable=SC2086  # the include flags are words
  local pids=() pid
  for source in python/src/*.cpp; do
    "$compiler" -std=c++20 -O2 -DNDEBUG -fPIC -fvisibility=hidden -fvisibility-inlines-hidden $includes -I. \
      -I"$kit/include" -c "$source" -o "$work/$(basename "$source" .cpp).o" &
    pids+=($!)
  done
  # Each compiler by its id: a bare `wait` would wait for the log's tee too, which never ends.
  for pid in "${pids[@]}"; do wait "$pid" || { echo "python_wheel: a binding did not compile"; exit 1; }; done
  local module="$work/_core$suffix" deps
  deps=$(ls "$kit"/deps/*.so*)
  # shellcheck disable=SC2086  # one path per library
  "$compiler" -shared -o "$module" "$work"/*.o -Wl,--start-group "$kit"/lib/*.a -Wl,--end-group \
    -Wl,--no-as-needed "$kit/lib/libmemreplay_policies.so" $deps -Wl,--exclude-libs,ALL -Wl,-rpath,'$ORIGIN/lib' \
    -lpthread -ldl
  {
    printf '%s\t%s\n' "$module" "$(basename "$module")" "$kit/bin/memreplay" bin/memreplay
    printf '%s\tlib/%s\n' "$kit/lib/libmemreplay_policies.so" libmemreplay_policies.so \
      "$kit/lib/libmemreplay_record.so" libmemreplay_record.so
    for dep in $deps; do printf '%s\tlib/%s\n' "$dep" "$(basename "$dep")"; done
    printf '%s\t%s\n' "$PWD/recorder/live/memreplay_record.h" torch/csrc/memreplay_record.h \
      "$PWD/recorder/live/memreplay_record_loader.h" torch/csrc/memreplay_record_loader.h
  } >"$work/package_files.txt"
  rm -rf build/lib* build/bdist* ./*.egg-info python/*.egg-info
  MEMREPLAY_PACKAGE_FILES="$work/package_files.txt" "$python" -m pip wheel --no-build-isolation --no-index --no-deps \
    -w "$out" .
  local wheel
  wheel=$(ls "$out"/memreplay-*.whl)
  echo "wheel: $wheel ($(du -h "$wheel" | cut -f1))"
  # Installed elsewhere, beside the machine's own packages (torch; its python3 is a venv's, so the
  # package goes into a folder on PYTHONPATH rather than into a venv of its own): does it work there?
  "$python" -m pip install --quiet --no-index --no-deps --target "$work/site" "$wheel"
  cd "$work"
  PYTHONPATH="$work/site" "$work/site/bin/memreplay" --version
  PYTHONPATH="$work/site" "$python" - "$OLDPWD/tests/data/real/traces/gpt2_train.default.pickle.xz" <<'PY'
import sys
import memreplay, memreplay.torch
result = memreplay.replay(sys.argv[1])
print("memreplay.replay:", result)
assert result["reserved_bytes.all.peak"] == 8082423808 and result.num_device_alloc == 137
print("memreplay.torch:", memreplay.torch.__file__, memreplay.torch._library)
PY
  echo "python_wheel: OK"
}

if [[ "${1:-}" == "--prepare" ]]; then
  prepare "${2:-build}"
else
  build_there "${1:-build/python-kit}"
fi
