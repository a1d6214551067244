#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to a working memreplay: installs what is missing
# (apt-get, idempotent), builds into build/, then imports a bundled real PyTorch trace and compares
# allocator policies on it.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake ninja-build g++ pkg-config libprotobuf-dev protobuf-compiler libcli11-dev
          libgtest-dev libgmock-dev libbenchmark-dev libzstd-dev liblzma-dev zlib1g-dev
          nlohmann-json3-dev libabsl-dev
          chromium python3  # chromium, python3: the report's browser tests
          python3-dev python3-venv python3-setuptools python3-pip pybind11-dev python3-pytest
          python3-pandas patchelf  # the Python package (tools/test_python.sh, wheels)
          python3-distributed  # memreplay.dask's tests (tests/python/dask)
          slurm-wlm munge)  # tools/slurm/test_single_node.sh
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# npm vendors the report's charting library at build time. A machine may already have Node.js
# with its own npm (NodeSource's nodejs bundles it and conflicts with Debian's npm package).
command -v npm >/dev/null || missing+=(nodejs npm)
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "installing: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The Python module for the system Python, the one tools/test_python.sh installs the package for.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython_EXECUTABLE=/usr/bin/python3
cmake --build build

# The main job, on a bundled real trace: import it, summarize it, compare policies.
memreplay=build/tools/memreplay
"$memreplay" import traces/gpt2_train.default.pickle.xz -o build/gpt2_train.mrt
"$memreplay" info build/gpt2_train.mrt
"$memreplay" compare build/gpt2_train.mrt \
  --policy pytorch --policy pytorch:expandable_segments:True \
  --policy pytorch:max_split_size_mb:64 --policy 'pytorch:roundup_power2_divisions:4' \
  --policy passthrough
