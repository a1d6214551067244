#!/usr/bin/env bash
# The Python package's tests: installs the package (pip install ., the C++ taken from BUILD, not
# compiled again) into a fresh venv that sees the system's packages (pytest, pandas), then runs
# tests/python with pytest. Run tools/setup.sh once first; tools/test.sh runs this at its end.
#   tools/test_python.sh [BUILD]        (default build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
python=${PYTHON:-/usr/bin/python3}
# A sanitizer build has no Python module (python/CMakeLists.txt): its C++ tests ran, these need a
# plain build.
if grep -q -E '^MEMREPLAY_(SANITIZE|TSAN):BOOL=ON' "$build/CMakeCache.txt"; then
  echo "test_python: $build is a sanitizer build, without the Python module: the Python tests run on a plain build"
  exit 0
fi
venv="$build/python-venv"
rm -rf "$venv"
"$python" -m venv --system-site-packages "$venv"
MEMREPLAY_BUILD_DIR="$build" "$venv/bin/pip" install --quiet --no-build-isolation --no-index --no-deps .
# The package as installed, not the source tree: run from a folder where `memreplay` is not python/.
PATH="$venv/bin:$PATH" MEMREPLAY_BUILD_DIR="$build" "$venv/bin/python" -m pytest -q -p no:cacheprovider --rootdir tests/python tests/python
