#!/usr/bin/env python3
"""Private-pool and release-and-retry ground truth on a real GPU, in one unattended run.

  pool_jobs.py --out DIR [--jobs NAME,...] [--parallel N] [--live]

For every job (small, seconds each):
  1. the job runs in a fresh process with allocator history on from its start
     (`_record_memory_history(enabled="all", context=None, stacks="python")`) and writes
     DIR/JOB.pickle.xz (`torch.cuda.memory._snapshot()`, taken while every private pool is still
     alive, so each segment's `segment_pool_id` is known) and DIR/JOB.live.json (memory_stats(),
     max_memory_reserved/allocated, the cap, the trace's action counts, the pools the job made);
  2. with --live, the job runs again under memreplay.torch (DIR/JOB.live.mrt, DIR/JOB.mrtlive.json);
  3. the snapshot's `alloc`/`free_completed` entries are replayed through PyTorch's real allocator,
     one fresh process per config (the seven shared configs of tests/data/real/groundtruth/README.md, plus
     the job's own cap when it ran under one), with one torch.cuda.MemPool per recorded pool and
     `use_mem_pool` around that pool's allocations: DIR/replay/JOB.CONFIG.json in the shared replay
     rows' format, plus `pools` and each segment entry's address.
The pool of an allocation is the pool of the segment holding its address at that moment: a backward
walk from the final segments (an allocation in a segment freed before the snapshot gets pool 0 and
is counted as unknown; these jobs free no private segment before their snapshot).
Checks printed last: the default replay against the live run (reserved peak, device calls,
retries), and each config against its own row.
"""

from __future__ import annotations

import argparse
import bisect
import json
import lzma
import os
import pickle
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_replay import history_segments, replay_entries, run_stats, start_recording  # noqa: E402
from pool_job_workloads import CAPPED_JOBS, JOBS  # noqa: E402

CONFIGS = {  # name: (PYTORCH_CUDA_ALLOC_CONF, cap as a multiple of the default replay's allocated peak)
    "default": ("", None),
    "expandable": ("expandable_segments:True", None),
    "maxsplit64": ("max_split_size_mb:64", None),
    "pow2div4": ("roundup_power2_divisions:4", None),
    "pow2list": ("roundup_power2_divisions:[256:1,512:2,1024:4,>:8]", None),
    "gc07": ("garbage_collection_threshold:0.7", 1.25),
    "capped112": ("", 1.12),
}
FIELDS = ("reserved_peak", "allocated_peak", "requested_peak", "num_device_alloc", "num_device_free",
          "num_alloc_retries", "num_ooms", "oom_at_event")


# ---------------------------------------------------------------- the jobs (run inside the child)

def stats_summary(torch):
    s = torch.cuda.memory_stats()
    return {k: v for k, v in s.items() if k.startswith("num_") or ".all." in k}


def child_job(name: str, out_dir: str, cap: float, live_trace: str | None) -> None:
    import torch

    recording = start_recording(torch, cap, live_trace, 4_000_000)
    pools = []
    start = time.perf_counter()
    keep = JOBS[name](torch, pools)
    wall = time.perf_counter() - start
    stats = stats_summary(torch)
    result = {"job": name, "cap": cap, "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
              "torch": torch.__version__, "total_memory": torch.cuda.get_device_properties(0).total_memory,
              "max_memory_reserved": torch.cuda.max_memory_reserved(),
              "max_memory_allocated": torch.cuda.max_memory_allocated(), "wall_s": wall, "stats": stats,
              "pools_made": pools}
    if live_trace:
        recording.stop()
        path = os.path.join(out_dir, f"{name}.mrtlive.json")
    else:
        snapshot = torch.cuda.memory._snapshot()
        trace = snapshot["device_traces"][0]
        actions = {}
        for e in trace:
            actions[e["action"]] = actions.get(e["action"], 0) + 1
        result["actions"] = actions
        result["trace_entry_keys"] = sorted({k for e in trace[:2000] for k in e})
        result["segment_pools"] = sorted({str(tuple(s.get("segment_pool_id", ()))) for s in snapshot["segments"]})
        with lzma.open(os.path.join(out_dir, f"{name}.pickle.xz"), "wb", preset=9) as f:
            pickle.dump(snapshot, f)
        path = os.path.join(out_dir, f"{name}.live.json")
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
    del keep


def child_async(name: str, out_dir: str) -> None:
    """The job under backend:cudaMallocAsync (set by the caller), no history: its reserved peak is
    the driver pool's ReservedMemHigh, to set beside the cuda_async model's replay of its trace."""
    import torch

    torch.cuda.init()
    keep = JOBS[name](torch, [])
    torch.cuda.synchronize()
    result = {"job": name, "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""), "torch": torch.__version__,
              "total_memory": torch.cuda.get_device_properties(0).total_memory,
              "max_memory_reserved": torch.cuda.max_memory_reserved(),
              "max_memory_allocated": torch.cuda.max_memory_allocated(), "stats": stats_summary(torch)}
    with open(os.path.join(out_dir, f"{name}.asyncpool.json"), "w") as f:
        json.dump(result, f, indent=1)
    del keep


# ---------------------------------------------------------------- pools of a snapshot's entries

def entry_pools(snapshot) -> tuple[list, list, int]:
    """(entries, pool of each entry or None, allocations in a segment of unknown pool).
    Entries: device 0's alloc / free_completed; pool: a tuple, (0, 0) for the default pool."""
    final = sorted((s["address"], s["total_size"], tuple(s.get("segment_pool_id", (0, 0))),
                    bool(s.get("is_expandable"))) for s in snapshot["segments"])
    starts = [s[0] for s in final]
    trace = snapshot["device_traces"][0]

    def final_pool(addr):
        i = bisect.bisect_right(starts, addr) - 1
        if i >= 0 and addr < final[i][0] + final[i][1]:
            return final[i][2]
        return None

    # Backward walk: a segment_alloc / segment_free's range is in `freed` (pool unknown) between a
    # segment_free and the segment_alloc before it.
    freed = []  # (start, end) ranges of cudaMalloc segments freed later
    pools = [None] * len(trace)
    unknown = 0
    for i in range(len(trace) - 1, -1, -1):
        e = trace[i]
        a = e["action"]
        if a == "segment_free":
            freed.append((e["addr"], e["addr"] + e["size"]))
        elif a == "segment_alloc":
            r = (e["addr"], e["addr"] + e["size"])
            if r in freed:
                freed.remove(r)
        elif a in ("alloc", "free_completed"):
            addr = e["addr"]
            if any(lo <= addr < hi for lo, hi in freed):
                pools[i] = (0, 0)
                unknown += a == "alloc"
            else:
                p = final_pool(addr)
                if p is None:  # an expandable range unmapped later: its segment's reservation
                    p = (0, 0)
                    unknown += a == "alloc"
                pools[i] = p
    keep = [i for i, e in enumerate(trace) if e["action"] in ("alloc", "free_completed")]
    return [trace[i] for i in keep], [pools[i] for i in keep], unknown


def segment_alloc_pools(snapshot) -> dict:
    """The pool of each segment_alloc entry of device 0 (by index): the final segment's
    segment_pool_id, or (0, 0) for a segment freed before the snapshot (pool unknown)."""
    final = {s["address"]: tuple(s.get("segment_pool_id", (0, 0))) for s in snapshot["segments"]}
    trace = snapshot["device_traces"][0]
    pools, freed_later = {}, set()
    for i in range(len(trace) - 1, -1, -1):
        e = trace[i]
        if e["action"] == "segment_free":
            freed_later.add(e["addr"])
        elif e["action"] == "segment_alloc":
            pools[i] = (0, 0) if e["addr"] in freed_later else final.get(e["addr"], (0, 0))
            freed_later.discard(e["addr"])
    return pools


def inferred_empty_caches(trace, alloc_pools=None) -> list[int]:
    """Indices of the trace entries before which the job called empty_cache, by the importer's rules
    (recorder/import/empty_cache_inference.h): a run of segment_free entries that releases every
    entirely free segment of the default pool (`alloc_pools`: segment_alloc_pools(); a private
    pool keeps its free segments while it lives), is not followed by an oom before the next alloc,
    and is not a release-and-retry (not right after a free, not opening a capture, and followed at
    once by a segment_alloc that would pass the most ever reserved).
    The trace starts from an empty allocator (history on from the start)."""
    alloc_pools = alloc_pools or {}
    reserved, peak, before = 0, 0, []
    for e in trace:
        before.append(reserved)
        if e["action"] in ("segment_alloc", "segment_map"):
            reserved += e["size"]
        elif e["action"] in ("segment_free", "segment_unmap"):
            reserved -= e["size"]
        peak = max(peak, reserved)
    segments = {}  # address -> [size, live blocks, pool]
    grown_pools = set()  # the pools that have had a segment so far
    found, i = [], 0
    while i < len(trace):
        a = trace[i]["action"]
        if a not in ("segment_free", "segment_unmap"):
            e = trace[i]
            if a == "segment_alloc":
                segments[e["addr"]] = [e["size"], 0, alloc_pools.get(i, (0, 0))]
                grown_pools.add(alloc_pools.get(i, (0, 0)))
            elif a in ("alloc", "free_completed"):
                for start, seg in segments.items():
                    if start <= e["addr"] < start + seg[0]:
                        seg[1] = max(0, seg[1] + (1 if a == "alloc" else -1))
                        break
            i += 1
            continue
        end = i
        while end < len(trace) and trace[end]["action"] in ("segment_free", "segment_unmap"):
            end += 1
        released = {trace[k]["addr"] for k in range(i, end) if trace[k]["action"] == "segment_free"}
        all_free = all(start in released for start, seg in segments.items() if seg[1] == 0 and seg[2] == (0, 0))
        oom = False
        for k in range(end, len(trace)):
            if trace[k]["action"] == "oom":
                oom = True
                break
            if trace[k]["action"] == "alloc":
                break
        after_free = i > 0 and trace[i - 1]["action"] in ("free_completed", "free_requested")
        # torch.cuda.graph() empties the cache right before a capture: a run the first segment of a
        # private pool follows is that empty_cache, not a retry.
        next_pool = alloc_pools.get(end, (0, 0))
        opens_capture = next_pool != (0, 0) and next_pool not in grown_pools
        retry = (not after_free and not opens_capture and end < len(trace)
                 and trace[end]["action"] in ("segment_alloc", "segment_map") and before[i] + trace[end]["size"] > peak)
        if all_free and not oom and not retry:
            found.append(i)
        for k in range(i, end):
            segments.pop(trace[k]["addr"], None)
        i = end
    return found


def child_replay(snapshot_path: str, cap: float, out_path: str, live_path: str) -> None:
    import torch

    with lzma.open(snapshot_path) as f:
        snapshot = pickle.load(f)
    entries, pools, unknown = entry_pools(snapshot)
    # Where the job called empty_cache: before which of the replayed entries.
    full = snapshot["device_traces"][0]
    empties = set()
    for i in inferred_empty_caches(full, segment_alloc_pools(snapshot)):
        empties.add(sum(1 for e in full[:i] if e["action"] in ("alloc", "free_completed")))
    start_recording(torch, cap, None, 8_000_000)
    live, streams, mempools, oom_at, seconds = replay_entries(torch, entries, pools, empties)
    stats = torch.cuda.memory_stats()
    segments = history_segments(torch)
    run = {
        "cap": cap, "cap_bytes": int(cap * torch.cuda.get_device_properties(0).total_memory) if cap else None,
        "replay_s": seconds, "events": len(entries), **run_stats(stats, oom_at),
        "segment_events": [[s[0], s[2]] for s in segments],
    }
    row = {"snapshot": os.path.basename(snapshot_path), "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
           "torch": torch.__version__, "total_memory": torch.cuda.get_device_properties(0).total_memory,
           "streams": len(streams), "pools": [list(p) for p in mempools],
           "pool_ids_in_replay": [list(mp.id) for mp in mempools.values()],
           "allocations_of_unknown_pool": unknown, "empty_cache_before_events": sorted(empties),
           "run": run, "segments": segments}
    if live_path and os.path.exists(live_path):
        live_run = json.load(open(live_path))
        s = live_run["stats"]
        row["equal_to_live"] = {
            "reserved_peak": run["reserved_peak"] == live_run["max_memory_reserved"],
            "num_device_alloc": run["num_device_alloc"] == s["num_device_alloc"],
            "num_device_free": run["num_device_free"] == s["num_device_free"],
            "num_alloc_retries": run["num_alloc_retries"] == s["num_alloc_retries"],
        }
    with open(out_path, "w") as f:
        json.dump(row, f)
    del live, mempools


# ---------------------------------------------------------------- driver

def run_child(args: list[str], env_conf: str | None, log: str, timeout: int = 300) -> int:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
    if env_conf:
        env["PYTORCH_CUDA_ALLOC_CONF"] = env_conf
    with open(log, "a") as f:
        try:
            return subprocess.run([sys.executable, __file__] + args, env=env, stdout=f, stderr=subprocess.STDOUT,
                                  timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            f.write("TIMEOUT\n")
            return 124


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out")
    parser.add_argument("--jobs", default=",".join(j for j in JOBS if j != "graph_release"))
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--live", action="store_true", help="also record each job with memreplay.torch")
    parser.add_argument("--no-replay", action="store_true", help="record only, no replays through PyTorch")
    parser.add_argument("--reuse", metavar="DIR",
                        help="take the snapshots and live stats of an earlier run from DIR (JOB.pickle.xz, "
                             "JOB.live.json) instead of running the jobs again; --live still records")
    parser.add_argument("--async-runs", action="store_true",
                        help="run each job once more under PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync"
                             " (no history: JOB.asyncpool.json with its reserved peak)")
    parser.add_argument("--child-job", nargs=3, metavar=("JOB", "OUT", "CAP"), help=argparse.SUPPRESS)
    parser.add_argument("--child-live", metavar="MRT", help=argparse.SUPPRESS)
    parser.add_argument("--child-async", nargs=2, metavar=("JOB", "OUT"), help=argparse.SUPPRESS)
    parser.add_argument("--child-replay", nargs=4, metavar=("SNAPSHOT", "CAP", "OUT", "LIVE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_job:
        child_job(args.child_job[0], args.child_job[1], float(args.child_job[2]), args.child_live)
        return
    if args.child_async:
        child_async(*args.child_async)
        return
    if args.child_replay:
        child_replay(args.child_replay[0], float(args.child_replay[1]), args.child_replay[2], args.child_replay[3])
        return
    out = args.out
    os.makedirs(os.path.join(out, "replay"), exist_ok=True)
    log = os.path.join(out, "log.txt")
    summary = []

    def say(line):
        print(line, flush=True)
        summary.append(line)

    jobs = args.jobs.split(",")
    caps = {}
    if args.reuse:
        import shutil
        for job in jobs:
            for suffix in (".pickle.xz", ".live.json"):
                shutil.copy(os.path.join(args.reuse, job + suffix), os.path.join(out, job + suffix))
            cap = json.load(open(os.path.join(out, job + ".live.json")))["cap"]
            if cap:
                caps[job] = cap
    # A capped job: the uncapped run's allocated peak, then the smallest cap above it that completes
    # with a release-and-retry.
    for job in [j for j in jobs if j in CAPPED_JOBS and not args.reuse]:
        probe = os.path.join(out, "probe")
        os.makedirs(probe, exist_ok=True)
        run_child(["--child-job", job, probe, "0"], None, log)
        base = json.load(open(os.path.join(probe, f"{job}.live.json")))
        total = base["total_memory"]
        peak = base["max_memory_allocated"]
        for factor in (1.01, 1.02, 1.04, 1.07, 1.1, 1.15, 1.25):
            rc = run_child(["--child-job", job, probe, str(factor * peak / total)], None, log)
            r = json.load(open(os.path.join(probe, f"{job}.live.json"))) if rc == 0 else None
            retries = r["stats"]["num_alloc_retries"] if r else None
            say(f"{job} probe: cap {factor} x allocated peak {peak}: exit {rc}, retries {retries}")
            if rc == 0 and retries:
                caps[job] = factor * peak / total
                break

    def record(job):
        cap = caps.get(job, 0.0)
        t = time.time()
        rc = 0 if args.reuse else run_child(["--child-job", job, out, str(cap)], None, log)
        if args.live and rc == 0:
            rc2 = run_child(["--child-job", job, out, str(cap), "--child-live", os.path.join(out, f"{job}.live.mrt")],
                            None, log)
            if rc2 != 0:
                say(f"{job}: live recording failed (exit {rc2})")
        return job, rc, time.time() - t

    with ThreadPoolExecutor(args.parallel) as ex:
        recorded = list(ex.map(record, jobs))
    for job, rc, s in recorded:
        if rc != 0:
            say(f"{job}: FAILED (exit {rc}, {s:.0f} s)")
            continue
        live = json.load(open(os.path.join(out, f"{job}.live.json")))
        st = live["stats"]
        say(f"{job}: live reserved peak {live['max_memory_reserved']}, allocated peak {live['max_memory_allocated']},"
            f" device alloc/free {st['num_device_alloc']}/{st['num_device_free']}, retries {st['num_alloc_retries']},"
            f" ooms {st['num_ooms']}, pools {live['segment_pools']}, actions {live['actions']} ({s:.0f} s)")
        say(f"{job}: trace entry keys {live['trace_entry_keys']}")
        mrt = os.path.join(out, f"{job}.mrtlive.json")
        if os.path.exists(mrt):
            m = json.load(open(mrt))
            say(f"{job}: memreplay.torch run: reserved peak {m['max_memory_reserved']}, device alloc/free"
                f" {m['stats']['num_device_alloc']}/{m['stats']['num_device_free']}, retries {m['stats']['num_alloc_retries']}")
    done = [job for job, rc, _ in recorded if rc == 0]
    if args.async_runs:  # one at a time: the pool's growth is what is measured
        for job in done:
            rc = run_child(["--child-async", job, out], "backend:cudaMallocAsync", log)
            if rc != 0:
                say(f"{job} under cudaMallocAsync: FAILED (exit {rc})")
                continue
            a = json.load(open(os.path.join(out, f"{job}.asyncpool.json")))
            say(f"{job} under cudaMallocAsync: reserved peak {a['max_memory_reserved']}, allocated peak"
                f" {a['max_memory_allocated']}")
    if args.no_replay:
        with open(os.path.join(out, "summary_live.txt"), "w") as f:
            f.write("\n".join(summary) + "\n")
        return

    def replay(job, config, cap):
        conf = CONFIGS[config][0] if config in CONFIGS else ""
        path = os.path.join(out, "replay", f"{job}.{config}.json")
        rc = run_child(["--child-replay", os.path.join(out, f"{job}.pickle.xz"), str(cap), path,
                        os.path.join(out, f"{job}.live.json") if config in ("default", "livecap") else ""], conf, log)
        return job, config, rc, path

    defaults = []
    with ThreadPoolExecutor(args.parallel) as ex:
        first = [ex.submit(replay, job, "default", 0.0) for job in done]
        defaults = [f.result() for f in first]
    peaks = {}
    for job, config, rc, path in defaults:
        if rc == 0:
            peaks[job] = json.load(open(path))
    total = next(iter(peaks.values()))["total_memory"] if peaks else 1
    tasks = []
    for job in peaks:
        for config, (conf, factor) in CONFIGS.items():
            if config == "default":
                continue
            cap = factor * peaks[job]["run"]["allocated_peak"] / total if factor else 0.0
            tasks.append((job, config, cap))
        if caps.get(job):
            tasks.append((job, "livecap", caps[job]))
    with ThreadPoolExecutor(args.parallel) as ex:
        rest = list(ex.map(lambda t: replay(*t), tasks))
    for job, config, rc, path in defaults + rest:
        if rc != 0:
            say(f"replay {job}.{config}: FAILED (exit {rc})")
            continue
        row = json.load(open(path))
        r = row["run"]
        eq = row.get("equal_to_live")
        say(f"replay {job}.{config}: reserved {r['reserved_peak']} allocated {r['allocated_peak']} device"
            f" {r['num_device_alloc']}/{r['num_device_free']} retries {r['num_alloc_retries']} ooms {r['num_ooms']}"
            f" oom_at {r['oom_at_event']} pools {row['pools']} unknown-pool allocs {row['allocations_of_unknown_pool']}"
            + (f" equal to live: {eq}" if eq else ""))
    with open(os.path.join(out, "summary.txt"), "w") as f:
        f.write("\n".join(summary) + "\n")


if __name__ == "__main__":
    main()
