#!/usr/bin/env python3
"""Per-pool figures of a torch memory snapshot, straight from its pickle (no memreplay code).

For each pool: allocations, segments (segment_alloc entries), the most its segments held at once,
and the most its live blocks' requested bytes reached. torch 2.11's trace entries carry no pool:
a segment_alloc gets the segment_pool_id of the final segment at its address when no segment_free
of that address follows it (else the default pool, as memreplay's import does), and an alloc the
pool of the segment holding its address. The expected figures of tests/pool_groundtruth_test.cpp
(PoolInfo) come from this script.

  tools/gpu/pool_summary_from_snapshot.py tests/data/pools/mempool_kv_cache.pickle.xz
"""
import bisect
import lzma
import pickle
import sys


def pool_figures(path):
    with lzma.open(path) if path.endswith(".xz") else open(path, "rb") as f:
        snapshot = pickle.load(f)
    trace = snapshot["device_traces"][0]
    final_pool = {s["address"]: tuple(s["segment_pool_id"]) for s in snapshot["segments"]}
    last_free = {e["addr"]: i for i, e in enumerate(trace) if e["action"] == "segment_free"}
    segments, blocks, reserved, requested, figures = {}, {}, {}, {}, {}

    def pool(p):
        return figures.setdefault(p, {"allocs": 0, "segments": 0, "peak_reserved": 0, "peak_requested": 0})

    for i, e in enumerate(trace):
        action, addr = e["action"], e["addr"]
        if action == "segment_alloc":
            p = final_pool.get(addr, (0, 0)) if last_free.get(addr, -1) < i else (0, 0)
            segments[addr] = (e["size"], p)
            pool(p)["segments"] += 1
            reserved[p] = reserved.get(p, 0) + e["size"]
            pool(p)["peak_reserved"] = max(pool(p)["peak_reserved"], reserved[p])
        elif action == "segment_free":
            size, p = segments.pop(addr)
            reserved[p] -= size
        elif action == "alloc":
            starts = sorted(segments)
            start = starts[bisect.bisect_right(starts, addr) - 1]
            if not start <= addr < start + segments[start][0]:
                sys.exit(f"{path}: entry {i}: alloc at {addr:#x} in no segment (a truncated history?)")
            p = segments[start][1]
            pool(p)["allocs"] += 1
            blocks[addr] = (e["size"], p)
            requested[p] = requested.get(p, 0) + e["size"]
            pool(p)["peak_requested"] = max(pool(p)["peak_requested"], requested[p])
        elif action == "free_completed":
            if addr not in blocks:
                sys.exit(f"{path}: entry {i}: free of {addr:#x}, never allocated (a truncated history?)")
            size, p = blocks.pop(addr)
            requested[p] -= size
    return figures


if __name__ == "__main__":
    for path in sys.argv[1:]:
        for p, f in sorted(pool_figures(path).items()):
            print(f"{path}: pool {p}: {f}")
