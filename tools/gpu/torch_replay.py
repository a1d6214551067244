#!/usr/bin/env python3
"""Replays the ground-truth rows through PyTorch's real allocator on a real GPU, the way
tests/data/real/groundtruth/README.md says they were made, and records where the driver put each segment.

  torch_replay.py --snapshots DIR --truth DIR --out DIR [--rows GLOB] [--repeat N] [--live-traces DIR]

For each row (WORKLOAD.default.CONFIG.json under --truth) and each repetition, a fresh Python process
with that row's PYTORCH_CUDA_ALLOC_CONF replays the snapshot's `alloc` and `free_completed` entries of
device 0 in order (`torch.empty(size, dtype=torch.uint8)` on the entry's stream, the tensor dropped at
`free_completed`; the row's per-process cap when it has one; stop at the first OutOfMemoryError), with
allocator history on. It writes OUT/ROW.rN.json: memory_stats() in the ground truth's terms, every
segment entry the allocator produced as [action, address, size, stream], and which fields equal the
ground truth. Why: the simulator's address model (replayer/sim_device.cpp) is fitted to these
addresses, and a row where PyTorch does not repeat its own ground truth is not a simulator bug.
"""

from __future__ import annotations

import argparse
import glob
import json
import lzma
import os
import pickle
import subprocess
import sys
import time

FIELDS = ("reserved_peak", "allocated_peak", "requested_peak", "num_device_alloc", "num_device_free",
          "num_alloc_retries", "num_ooms", "oom_at_event")


def start_recording(torch, cap: float, live_trace: str | None, max_entries: int):
    """Initialises CUDA, applies the per-process cap, and starts recording segments: memreplay.torch
    into `live_trace` when given (returns the recording), else PyTorch's own history (returns None)."""
    torch.cuda.init()
    if cap:
        torch.cuda.set_per_process_memory_fraction(cap)
    if not live_trace:
        torch.cuda.memory._record_memory_history(enabled="all", context=None, stacks="python", max_entries=max_entries)
        return None
    import memreplay.torch

    recording = memreplay.torch.start(live_trace)
    if not recording.active:
        raise SystemExit("the memreplay recorder did not start")
    return recording


def replay_entries(torch, entries, pools=None, empty_cache_before=()):
    """Replays `alloc` / `free_completed` entries through the real allocator: `torch.empty` on the
    entry's stream (handle 0 is the default stream, each other one a stream of its own), inside
    `use_mem_pool` of one MemPool per recorded private pool (`pools[i]`, (0, 0) the default), the
    tensor dropped at `free_completed`; empty_cache() before the entries named (index len(entries):
    after the last). Stops at the first
    OutOfMemoryError. Returns (live tensors, streams, mempools, index of the OOM or None, seconds)."""
    streams, mempools, live = {}, {}, {}
    oom_at = None
    start = time.perf_counter()
    for index, e in enumerate(entries):
        if index in empty_cache_before:
            torch.cuda.empty_cache()
        if e["action"] != "alloc":
            live.pop(e["addr"], None)
            continue
        stream = streams.get(e["stream"])
        if stream is None:
            stream = streams[e["stream"]] = torch.cuda.default_stream() if e["stream"] == 0 else torch.cuda.Stream()
        pool = pools[index] if pools else (0, 0)
        try:
            with torch.cuda.stream(stream):
                if pool == (0, 0):
                    live[e["addr"]] = torch.empty(e["size"], dtype=torch.uint8, device="cuda")
                else:
                    mp = mempools.get(pool)
                    if mp is None:
                        mp = mempools[pool] = torch.cuda.MemPool()
                    with torch.cuda.use_mem_pool(mp):
                        live[e["addr"]] = torch.empty(e["size"], dtype=torch.uint8, device="cuda")
        except torch.OutOfMemoryError:
            oom_at = index
            break
    if oom_at is None and len(entries) in empty_cache_before:  # an empty_cache after the last entry
        torch.cuda.empty_cache()
    torch.cuda.synchronize()
    return live, streams, mempools, oom_at, time.perf_counter() - start


def history_segments(torch):
    """Every segment entry of device 0's history: [action, address, size, stream]."""
    trace = torch.cuda.memory._snapshot()["device_traces"][0]
    return [[t["action"], t["addr"], t["size"], t["stream"]] for t in trace if t["action"].startswith("segment")]


def run_stats(stats, oom_at):
    """memory_stats() in the ground truth's terms."""
    return {"reserved_peak": stats["reserved_bytes.all.peak"], "allocated_peak": stats["allocated_bytes.all.peak"],
            "requested_peak": stats["requested_bytes.all.peak"], "num_device_alloc": stats["num_device_alloc"],
            "num_device_free": stats["num_device_free"], "num_alloc_retries": stats["num_alloc_retries"],
            "num_ooms": stats["num_ooms"], "oom_at_event": oom_at}


def child(row_path: str, snapshot_path: str, out_path: str) -> None:
    import torch

    live_trace = os.environ.get("MEMREPLAY_REPLAY_TRACE")  # record with memreplay instead of history

    row = json.load(open(row_path))
    with lzma.open(snapshot_path) as f:
        snapshot = pickle.load(f)
    entries = [e for e in snapshot["device_traces"][0] if e["action"] in ("alloc", "free_completed")]

    cap = row["run"].get("cap") or 0.0
    recording = start_recording(torch, cap, live_trace, 8_000_000)
    live, streams, _, oom_at, seconds = replay_entries(torch, entries)
    stats = torch.cuda.memory_stats()
    if recording:
        recording.stop()
        segments = []  # in the .mrt
    else:
        segments = history_segments(torch)
    run = run_stats(stats, oom_at)
    truth = row["run"]
    result = {
        "row": os.path.basename(row_path),
        "alloc_conf": row["alloc_conf"],
        "cap": cap,
        "replay_s": seconds,
        "run": run,
        "equal_to_truth": {k: run[k] == truth.get(k) for k in FIELDS},
        "segment_sizes_equal": None if live_trace else [[s[0], s[2]] for s in segments] == truth.get("segment_events"),
        "segments": segments,
        "total_memory": torch.cuda.get_device_properties(0).total_memory,
        "torch": torch.__version__,
    }
    with open(out_path, "w") as f:
        json.dump(result, f)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--snapshots")
    parser.add_argument("--truth")
    parser.add_argument("--out")
    parser.add_argument("--rows", default="*.json")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--live-traces", metavar="DIR",
                        help="record each replay with memreplay.torch into DIR/ROW.rN.mrt instead of PyTorch's "
                             "history (whose ring buffer grows by host mmaps that take VA next to the driver's)")
    parser.add_argument("--child", nargs=3, metavar=("ROW", "SNAPSHOT", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    if not (args.snapshots and args.truth and args.out):
        parser.error("--snapshots, --truth and --out are required")

    os.makedirs(args.out, exist_ok=True)
    summary = []
    for row_path in sorted(glob.glob(os.path.join(args.truth, args.rows))):
        row = json.load(open(row_path))
        snapshot = os.path.join(args.snapshots, row["snapshot"])
        for r in range(args.repeat):
            name = os.path.basename(row_path)[: -len(".json")]
            out = os.path.join(args.out, f"{name}.r{r}.json")
            env = dict(os.environ, PYTORCH_CUDA_ALLOC_CONF=row["alloc_conf"])
            if args.live_traces:
                os.makedirs(args.live_traces, exist_ok=True)
                env["MEMREPLAY_REPLAY_TRACE"] = os.path.join(args.live_traces, f"{name}.r{r}.mrt")
            if not row["alloc_conf"]:
                env.pop("PYTORCH_CUDA_ALLOC_CONF")
            done = subprocess.run([sys.executable, __file__, "--child", row_path, snapshot, out], env=env)
            if done.returncode != 0 or not os.path.exists(out):
                summary.append(f"{name} r{r}: FAILED (exit {done.returncode})")
                continue
            result = json.load(open(out))
            wrong = [k for k, ok in result["equal_to_truth"].items() if not ok]
            if result["segment_sizes_equal"] is False:
                wrong.append("segment_events")
            summary.append(f"{name} r{r}: {'exact' if not wrong else 'differs: ' + ', '.join(wrong)}"
                           f" ({result['replay_s']:.1f} s, {len(result['segments'])} segment entries)")
            print(summary[-1], flush=True)
    with open(os.path.join(args.out, "summary.txt"), "w") as f:
        f.write("\n".join(summary) + "\n")


if __name__ == "__main__":
    main()
