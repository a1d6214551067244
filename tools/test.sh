#!/usr/bin/env bash
# The whole test suite (GoogleTest through CTest). Run tools/setup.sh once first.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
cmake --build "$build"
ctest --test-dir "$build" --output-on-failure -j "$(nproc)"
