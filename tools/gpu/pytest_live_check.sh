#!/usr/bin/env bash
# The pytest plugin's live mode on a real GPU (the device machine: torch 2.11, pytest, pybind11,
# torchvision, nvcc; no network). A ResNet-18's training steps are recorded under
# @pytest.mark.limit_reserved and replayed from an empty pool:
#   1. it passes under its limit;
#   2. a change that grows its memory (a larger batch) fails it, naming the reserved peak, the
#      limit and the stacks live at the peak;
#   3. the same step after a test that leaves memory cached gives the same reserved peak
#      (the limit does not depend on what ran before);
#   4. --memreplay-fail-on-increase: a second run with a larger (still allowed) batch fails as grown.
# Needs the package installed, or a wheel to install: from the repository root,
#   tools/gpu/pytest_live_check.sh [WHEEL]       (default: the one tools/gpu/python_wheel.sh left in
#                                                 out/python_wheel, which it builds first if absent)
# Results in $OUT (default out/pytest_live_check): pytest_live_check.log and one log per run.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
OUT=${OUT:-out/pytest_live_check}
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
python=${PYTHON:-python3}
exec > >(tee "$OUT/pytest_live_check.log") 2>&1

wheel=${1:-$(ls out/python_wheel/memreplay-*.whl 2>/dev/null | head -1)}
if [[ -z "$wheel" ]]; then
  OUT=out/python_wheel tools/gpu/python_wheel.sh || { echo "pytest_live_check: no wheel"; exit 1; }
  wheel=$(ls out/python_wheel/memreplay-*.whl | head -1)
fi
work=$(mktemp -d /tmp/memreplay-live.XXXXXX)
# Beside the machine's torch (its python3 is a venv's own): the package in a folder on PYTHONPATH.
"$python" -m pip install --quiet --no-index --no-deps --target "$work/site" "$wheel" || exit 1
export PYTHONPATH="$work/site${PYTHONPATH:+:$PYTHONPATH}"
py=$python
"$py" -c 'import torch; assert torch.cuda.is_available(); print("torch", torch.__version__, torch.cuda.get_device_name())' ||
  exit 1
# The recorder's extension is compiled against this torch once, before the tests time anything.
"$py" -m memreplay.torch build || exit 1

project="$work/project"
mkdir -p "$project"
cat >"$project/test_model.py" <<'EOF'
import os

import pytest
import torch

import torchvision

BATCH = int(os.environ.get("BATCH", "16"))
LIMIT = os.environ.get("LIMIT", "1GiB")


def train_step(batch):
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=10).cuda()
    optimizer = torch.optim.AdamW(model.parameters())
    for _ in range(3):
        x = torch.randn(batch, 3, 64, 64, device="cuda")
        loss = torch.nn.functional.cross_entropy(model(x), torch.randint(0, 10, (batch,), device="cuda"))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    torch.cuda.synchronize()


def test_leaves_memory_cached():
    global hoard
    hoard = [torch.empty(int(64e6), dtype=torch.uint8, device="cuda") for _ in range(8)]
    del hoard[::2]  # half freed: cached by the allocator, fragmented


@pytest.mark.limit_reserved(LIMIT, policy="pytorch")
def test_train_step():
    torch.cuda.memory._record_memory_history(stacks="python")
    train_step(BATCH)
    torch.cuda.memory._record_memory_history(enabled=None)
EOF

status=0
run() {  # NAME EXPECTED_EXIT ENV... -- PYTEST_ARGS...
  local name=$1 expected=$2
  shift 2
  local env=()
  while [[ "$1" != "--" ]]; do env+=("$1"); shift; done
  shift
  (cd "$project" && env "${env[@]}" "$py" -m pytest -rA -p no:randomly "$@") >"$OUT/$name.log" 2>&1
  local got=$?
  if [[ $got -eq $expected ]]; then echo "PASS $name (exit $got)"; else echo "FAIL $name (exit $got, wanted $expected)"; status=1; fi
}
peak_of() { grep -o 'reserved peak [0-9.]* [KMG]iB ([0-9]* bytes)' "$OUT/$1.log" | head -1; }

run 1_under_limit 0 BATCH=16 -- test_model.py::test_train_step
echo "  $(peak_of 1_under_limit)"
run 2_grown_over_limit 1 BATCH=2048 -- test_model.py::test_train_step
grep -q 'reserved peak .* > limit 1.00 GiB under pytorch' "$OUT/2_grown_over_limit.log" &&
  grep -q 'stacks live at the peak' "$OUT/2_grown_over_limit.log" &&
  grep -q 'test_model.py:[0-9]* train_step' "$OUT/2_grown_over_limit.log" ||
  { echo "FAIL 2_grown_over_limit: the failure does not name the peak, the limit and the stacks"; status=1; }
grep -A12 'reserved peak .* > limit' "$OUT/2_grown_over_limit.log" | head -14
run 3_after_cached_memory 0 BATCH=16 -- test_model.py
if [[ "$(peak_of 1_under_limit)" == "$(peak_of 3_after_cached_memory)" && -n "$(peak_of 1_under_limit)" ]]; then
  echo "PASS 3: the same reserved peak after a test that left memory cached: $(peak_of 3_after_cached_memory)"
else
  echo "FAIL 3: $(peak_of 1_under_limit) alone, $(peak_of 3_after_cached_memory) after cached memory"; status=1
fi
run 4a_first_figures 0 BATCH=16 LIMIT=8GiB -- --memreplay-fail-on-increase test_model.py::test_train_step
run 4b_grown_within_limit 1 BATCH=128 LIMIT=8GiB -- --memreplay-fail-on-increase test_model.py::test_train_step
grep -q 'grew past the figures kept' "$OUT/4b_grown_within_limit.log" ||
  { echo "FAIL 4b: not failed as grown past the figures kept"; status=1; }
run 4c_back_to_first 0 BATCH=16 LIMIT=8GiB -- --memreplay-fail-on-increase test_model.py::test_train_step
run 5_traces_kept 0 BATCH=16 -- --memreplay-traces "$OUT/traces" test_model.py::test_train_step
ls "$OUT/traces"/*.mrt >/dev/null 2>&1 && "$work/site/bin/memreplay" info "$OUT/traces"/*.mrt | head -5 ||
  { echo "FAIL 5: no trace kept"; status=1; }
rm -rf "$OUT/traces"
[[ $status -eq 0 ]] && echo "pytest_live_check: OK" || echo "pytest_live_check: FAILED"
exit $status
