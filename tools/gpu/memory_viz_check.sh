#!/usr/bin/env bash
# On the GPU machine, from the repository root, with the exports in $SNAPS (default build-h12/snaps)
# and this script and memory_viz_check.py carried beside them:
#   bash build-h12/memory_viz_check.sh
set -uo pipefail
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
python3 "$(dirname "$0")/memory_viz_check.py"
