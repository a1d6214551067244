#!/usr/bin/env bash
# The whole test suite: GoogleTest through CTest, then the Python package's (tools/test_python.sh,
# which installs the package from this build). Run tools/setup.sh once first.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
cmake --build "$build"
ctest --test-dir "$build" --output-on-failure -j "$(nproc)"
tools/test_python.sh "$build"
