#!/usr/bin/env bash
# On the GPU machine: the live recorder flags exactly the allocations made under a CUDA graph
# capture (tools/gpu/capture_flags_job.py), and a replay with pytorch@2.13 reads them.
#   OUT=DIR tools/gpu/capture_flags_check.sh BUILD
set -uo pipefail
cd "$(dirname "$0")/../.."
build=${1:?usage: OUT=DIR $0 BUILD}
out=${OUT:?set OUT}
mkdir -p "$out"
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
export MEMREPLAY_RECORD_LIB="$PWD/$build/recorder/live/libmemreplay_record.so" MEMREPLAY_SOURCE_DIR="$PWD"
export TORCH_EXTENSIONS_DIR=/tmp/memreplay-torch-extensions
memreplay() { LD_LIBRARY_PATH="$PWD/$build/live-libs" "$PWD/$build/tools/memreplay" "$@"; }
python3 tools/gpu/capture_flags_job.py "$out/capture_flags.mrt" "$out/capture_flags.expected.json" || exit 1
memreplay info "$out/capture_flags.mrt" --json "$out/capture_flags.info.json" >/dev/null || exit 1
memreplay info "$out/capture_flags.mrt" | tee "$out/capture_flags.info.txt" | grep -A4 "pool  kind"
memreplay replay "$out/capture_flags.mrt" --policy pytorch@2.13 --json "$out/capture_flags.replay.json" \
  2>"$out/capture_flags.replay.err" >/dev/null
echo "replay exit $?; stderr: $(cat "$out/capture_flags.replay.err")"
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
info = json.load(open(f"{out}/capture_flags.info.json"))
expected = json.load(open(f"{out}/capture_flags.expected.json"))
pools = info["devices"][0]["pools"]
ids = {str(p["id"]): tuple(p["torch_id"]) for p in info["pools"]}
graph = next(pid for pid, torch_id in ids.items() if list(torch_id) == expected["graph_pool"])
captured = {pid: p["captured_allocs"] for pid, p in pools.items()}
allocs = {pid: p["allocs"] for pid, p in pools.items()}
print("captures_flagged:", info["captures_flagged"], "pools:", ids, "allocs:", allocs, "captured:", captured,
      "capture's pool:", graph, "its live blocks after the capture:", expected["graph_pool_live_blocks"])
# Every allocation in the capture's pool was made under the capture; none elsewhere (the MemPool's four
# under use_mem_pool, the default pool's), and the capture's pool holds at least the blocks still live.
ok = info["captures_flagged"] and captured[graph] == allocs[graph] >= max(1, expected["graph_pool_live_blocks"])
ok = ok and all(captured[p] == 0 for p in captured if p != graph)
ok = ok and any(allocs[p] == expected["mempool_allocs"] for p in allocs if p != graph)
print("CAPTURE FLAGS", "PASS" if ok else "FAIL")
PY
