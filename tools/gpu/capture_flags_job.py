#!/usr/bin/env python3
"""A job whose allocations under a CUDA graph capture and in a MemPool outside one are known, recorded
with memreplay.torch: the trace must flag exactly the captured ones (format 1.3, kCaptured), which
`memreplay info --json` counts per pool (tools/gpu/capture_flags_check.sh compares).

  capture_flags_job.py TRACE EXPECTED.json

Pools: a torch.cuda.MemPool used with use_mem_pool (no capture: 4 allocations), and a
graph_pool_handle() that one graph captures into (the capture's allocations), both of the kind a
snapshot cannot tell apart ((0, N) ids).
"""

from __future__ import annotations

import json
import sys

import torch

import memreplay.torch as mt


def main() -> None:
    trace, expected_path = sys.argv[1], sys.argv[2]
    torch.cuda.init()
    x = torch.randn(1 << 20, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up outside the capture, as CUDA graphs require
        for _ in range(2):
            (x * 2 + 1).sum()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()

    with mt.record(trace):
        mempool = torch.cuda.MemPool()
        with torch.cuda.use_mem_pool(mempool):
            kept = [torch.empty(n << 20, dtype=torch.uint8, device="cuda") for n in (3, 5, 7, 9)]
        graph_pool = torch.cuda.graph_pool_handle()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=graph_pool):
            y = x * 2 + 1
            z = y.sum()
        # The allocations in the capture's pool: what the snapshot says that pool's segments saw.
        captured = sum(len([b for b in s["blocks"] if b["state"] != "inactive"]) for s in torch.cuda.memory_snapshot()
                       if tuple(s.get("segment_pool_id", (0, 0))) == tuple(graph_pool))
        graph.replay()
        torch.cuda.synchronize()
        del kept, y, z
    with open(expected_path, "w") as out:
        json.dump({"mempool_allocs": 4, "graph_pool": list(graph_pool), "graph_pool_live_blocks": captured}, out)
    print(f"capture_flags_job: 4 MemPool allocations; {captured} blocks live in the capture's pool after it")


if __name__ == "__main__":
    main()
