# Sourced by live_policy_check.sh and live_overhead_check.sh, from the repository root: the
# environment a live-policy job needs, for a build prepared by `live_policy_check.sh --prepare`.
#   live_env BUILD WORK   exports it (the extension is built in WORK unless TORCH_EXTENSIONS_DIR
#                         is set: two scripts in one call then build it once)
#   live_extension LOG    builds the allocator extension against this torch; non-zero on failure
live_env() {
  local build=$1 work=$2
  export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
  export MEMREPLAY_ALLOC_LIB="$PWD/$build/live-libs/libmemreplay_alloc.so"
  export MEMREPLAY_RECORD_LIB="$PWD/$build/recorder/live/libmemreplay_record.so"
  export MEMREPLAY_SOURCE_DIR="$PWD"
  export TORCH_EXTENSIONS_DIR="${TORCH_EXTENSIONS_DIR:-$work/torch-extensions}"
  export CUBLAS_WORKSPACE_CONFIG=:4096:8  # deterministic cuBLAS
  python=${PYTHON:-python3}
}

live_extension() {
  "$python" -c 'from memreplay.torch import _live; _live._extension()' >"$1" 2>&1
}
