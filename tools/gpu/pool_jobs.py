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

def train_step(opt, loss):
    """Backward through `loss`, one optimizer step, gradients dropped."""
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)


def job_graphs_shared_pool(torch, pools):
    """Two CUDA graphs, the second captured into the first one's pool, eager work between replays."""
    torch.manual_seed(0)
    lin1 = torch.nn.Linear(1024, 4096, device="cuda")
    lin2 = torch.nn.Linear(4096, 1024, device="cuda")
    x1 = torch.randn(256, 1024, device="cuda")
    x2 = torch.randn(640, 1024, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side), torch.no_grad():
        for _ in range(3):
            lin2(torch.relu(lin1(x1)))
            lin2(torch.relu(lin1(x2)))
    torch.cuda.current_stream().wait_stream(side)
    g1 = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(g1):
        y1 = lin2(torch.relu(lin1(x1)))
    pools.append({"id": list(g1.pool()), "kind": "graph", "name": "g1 (shared by g2)"})
    g2 = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(g2, pool=g1.pool()):
        y2 = lin2(torch.relu(lin1(x2))) * 2.0
    for step in range(8):
        g1.replay()
        eager = [torch.empty((step + 1) * 3_000_000 + k * 777_777, dtype=torch.uint8, device="cuda")
                 for k in range(4)]
        total = y1.sum() + eager[0][:16].float().sum()
        del eager
        g2.replay()
        w = torch.randn(1000 + step * 517, 2000, device="cuda") @ torch.randn(2000, 300, device="cuda")
        total = total + w.sum() + y2.sum()
        del w
    torch.cuda.synchronize()
    return [g1, g2, y1, y2]  # alive until the snapshot


def job_mempool_kv_cache(torch, pools):
    """A MemPool holding a KV cache that grows every step, beside eager attention compute."""
    torch.manual_seed(0)
    pool = torch.cuda.MemPool()
    pools.append({"id": list(pool.id), "kind": "mempool", "name": "kv cache"})
    batch, heads, dim = 4, 8, 64
    q_proj = torch.randn(heads * dim, heads * dim, device="cuda")
    with torch.cuda.use_mem_pool(pool):
        k_cache = torch.empty(batch, heads, 0, dim, device="cuda")
        v_cache = torch.empty(batch, heads, 0, dim, device="cuda")
    x = torch.randn(batch, 128, heads * dim, device="cuda")
    for step in range(40):
        tokens = 128 if step == 0 else 1 + step % 3
        h = torch.randn(batch, tokens, heads * dim, device="cuda") @ q_proj
        kv = h.view(batch, tokens, heads, dim).transpose(1, 2)
        with torch.cuda.use_mem_pool(pool):
            k_cache = torch.cat([k_cache, kv], dim=2)
            v_cache = torch.cat([v_cache, kv * 0.5], dim=2)
        q = kv[:, :, -1:, :]
        scores = torch.softmax(q @ k_cache.transpose(-1, -2) / dim ** 0.5, dim=-1)
        out = (scores @ v_cache).transpose(1, 2).reshape(batch, 1, heads * dim)
        x = torch.cat([x[:, 1:], out], dim=1) if step % 5 else x * 1.0
        del h, kv, q, scores, out
    torch.cuda.synchronize()
    return [pool, k_cache, v_cache, x]


def job_graphed_callables(torch, pools):
    """torch.cuda.make_graphed_callables on a small MLP, trained a few steps."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.GELU(), torch.nn.Linear(2048, 512)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    sample = torch.randn(128, 512, device="cuda", requires_grad=True)
    graphed = torch.cuda.make_graphed_callables(model, (sample,))
    for step in range(10):
        x = torch.randn(128, 512, device="cuda")
        y = graphed(x)
        train_step(opt, (y * y).mean())
        extra = torch.randn(300 + 40 * step, 900, device="cuda").relu().sum()
        del extra
    torch.cuda.synchronize()
    pools.append({"id": None, "kind": "graph", "name": "make_graphed_callables (forward and backward graphs)"})
    return [graphed, model, opt]


def job_compile_reduce_overhead(torch, pools):
    """torch.compile(mode="reduce-overhead"): cudagraph trees on their own private pool."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 256)).cuda()
    compiled = torch.compile(model, mode="reduce-overhead")
    outs = []
    with torch.no_grad():
        for step in range(12):
            x = torch.randn(64, 256, device="cuda")
            torch.compiler.cudagraph_mark_step_begin()
            y = compiled(x)
            outs.append(y.clone())
            if len(outs) > 3:
                outs.pop(0)
            z = torch.randn(200 + 50 * step, 700, device="cuda").sum()
            del z
    torch.cuda.synchronize()
    pools.append({"id": None, "kind": "graph", "name": "cudagraph trees"})
    return [compiled, model, outs]


def varying_training(torch, steps=24):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 4096),
                                torch.nn.GELU(), torch.nn.Linear(4096, 1024)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    sizes = [int(x) for x in torch.randint(64, 3072, (steps,), generator=torch.Generator().manual_seed(1))]
    for batch in sizes:
        x = torch.randn(batch, 1024, device="cuda")
        train_step(opt, model(x).float().pow(2).mean())
    torch.cuda.synchronize()
    return [model, opt]


def job_capped_retry(torch, pools):
    """Varying-shape training capped just above its allocated peak, so it needs release-and-retry."""
    return varying_training(torch)


def job_empty_cache_steps(torch, pools):
    """Varying-shape inference with torch.cuda.empty_cache() every 5th step (true empty_cache calls)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024)).cuda()
    with torch.no_grad():
        for step in range(20):
            x = torch.randn(64 + 97 * step % 1500, 1024, device="cuda")
            model(x).sum()
            if step % 5 == 4:
                torch.cuda.empty_cache()
    torch.cuda.synchronize()
    return [model]


def job_graph_release(torch, pools):
    """A CUDA graph used, then destroyed, then empty_cache: PyTorch frees its private pool's
    segments only then; eager work and a second graph (a new pool) follow."""
    torch.manual_seed(0)
    lin = torch.nn.Linear(2048, 2048, device="cuda")
    x = torch.randn(512, 2048, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side), torch.no_grad():
        for _ in range(2):
            lin(x).relu()
    torch.cuda.current_stream().wait_stream(side)
    g1 = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(g1):
        y1 = lin(x).relu() * 3.0
    pools.append({"id": list(g1.pool()), "kind": "graph", "name": "g1 (destroyed)"})
    for step in range(4):
        g1.replay()
        t = torch.empty(4_000_000 + step * 1_500_000, dtype=torch.uint8, device="cuda")
        del t
    del g1, y1
    torch.cuda.empty_cache()
    eager = [torch.empty(3_000_000 * (k + 1), dtype=torch.uint8, device="cuda") for k in range(6)]
    del eager
    g2 = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(g2):
        y2 = lin(x * 0.5)
    pools.append({"id": list(g2.pool()), "kind": "graph", "name": "g2"})
    g2.replay()
    torch.cuda.synchronize()
    return [g2, y2]


def job_graphs_eager_between(torch, pools):
    """Two CUDA graphs in one private pool, with eager work between the captures and between the
    replays. Each captured step frees a large temporary inside the capture, so the pool holds an
    entirely free segment when the second capture's torch.cuda.graph() empties the cache."""
    torch.manual_seed(0)
    lin1 = torch.nn.Linear(1024, 4096, device="cuda")
    lin2 = torch.nn.Linear(4096, 1024, device="cuda")
    x1 = torch.randn(256, 1024, device="cuda")
    x2 = torch.randn(512, 1024, device="cuda")

    def body(x):
        scratch = torch.ones(6_000_000 + x.shape[0] * 4096, device="cuda")
        h = torch.relu(lin1(x)) + scratch[:1]
        del scratch
        return lin2(h)

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side), torch.no_grad():
        for _ in range(3):
            body(x1)
            body(x2)
    torch.cuda.current_stream().wait_stream(side)
    g1 = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(g1):
        y1 = body(x1)
    pools.append({"id": list(g1.pool()), "kind": "graph", "name": "g1 (shared by g2)"})
    kept = []
    for k in range(5):  # eager work between the captures: some kept, most dropped
        t = torch.empty(2_500_000 * (k + 1) + 333_333, dtype=torch.uint8, device="cuda")
        if k % 2:
            kept.append(t)
    g2 = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(g2, pool=g1.pool()):
        y2 = body(x2) * 2.0
    total = torch.zeros((), device="cuda")
    for step in range(8):
        g1.replay()
        eager = [torch.empty((step + 2) * 1_900_000 + k * 555_555, dtype=torch.uint8, device="cuda") for k in range(3)]
        total += y1.sum() + eager[0][:8].float().sum()
        del eager
        g2.replay()
        w = torch.randn(700 + step * 311, 1500, device="cuda") @ torch.randn(1500, 400, device="cuda")
        total += w.sum() + y2.sum()
        del w
    torch.cuda.synchronize()
    return [g1, g2, y1, y2, kept, total]


def job_graphs_pool_released(torch, pools):
    """job_graphs_eager_between, then its graphs dropped and the cache emptied (their pool's segments
    go before the snapshot, so the snapshot no longer names that pool), then eager work and a new
    graph in a pool of its own."""
    keep = job_graphs_eager_between(torch, pools)
    del keep
    torch.cuda.empty_cache()
    lin = torch.nn.Linear(2048, 2048, device="cuda")
    x = torch.randn(384, 2048, device="cuda")
    for step in range(4):
        t = [torch.empty(3_000_000 + step * 1_200_000 + k * 900_000, dtype=torch.uint8, device="cuda") for k in range(3)]
        del t
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side), torch.no_grad():
        lin(x).relu()
    torch.cuda.current_stream().wait_stream(side)
    g3 = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(g3):
        y3 = lin(x).relu() * 0.5
    pools[0]["name"] = "g1 (shared by g2; released)"
    pools.append({"id": list(g3.pool()), "kind": "graph", "name": "g3"})
    for _ in range(3):
        g3.replay()
        w = torch.randn(1200, 2048, device="cuda").sum()
        del w
    torch.cuda.synchronize()
    return [g3, y3]


def job_compile_default_training(torch, pools):
    """torch.compile (default mode, Inductor without CUDA graphs) on a small transformer block,
    AdamW training steps at two sequence lengths (a recompile for the second)."""
    torch.manual_seed(0)
    width = 512
    block = torch.nn.TransformerEncoderLayer(width, 8, 4 * width, dropout=0.0, batch_first=True,
                                             norm_first=True).cuda()
    head = torch.nn.Linear(width, 1000).cuda()
    model = torch.nn.Sequential(block, head)
    compiled = torch.compile(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for step in range(10):
        seq = 128 if step < 6 else 192
        x = torch.randn(16, seq, width, device="cuda")
        train_step(opt, compiled(x).float().pow(2).mean())
    torch.cuda.synchronize()
    return [compiled, model, opt]


def job_capped_varlen(torch, pools):
    """Variable-length transformer training capped just above its allocated peak: release-and-retry
    inside the backward pass, right after frees, recorded without stacks."""
    torch.manual_seed(0)
    width = 768
    model = torch.nn.TransformerEncoder(
        torch.nn.TransformerEncoderLayer(width, 12, 4 * width, dropout=0.0, batch_first=True, norm_first=True), 4,
        enable_nested_tensor=False).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    lengths = [int(x) for x in torch.randint(64, 1024, (16,), generator=torch.Generator().manual_seed(5))]
    for seq in lengths:
        x = torch.randn(8, seq, width, device="cuda")
        train_step(opt, model(x).float().pow(2).mean())
    torch.cuda.synchronize()
    return [model, opt]


def job_models_in_turn(torch, pools):
    """Three models loaded, run and dropped in turn, with empty_cache between them."""
    torch.manual_seed(0)
    shapes = [(2048, 8192, 4), (1024, 4096, 8), (3072, 3072, 3)]
    for width, hidden, depth in shapes:
        layers = []
        for _ in range(depth):
            layers += [torch.nn.Linear(width, hidden), torch.nn.GELU(), torch.nn.Linear(hidden, width)]
        model = torch.nn.Sequential(*layers).cuda()
        with torch.no_grad():
            for batch in (64, 512, 128, 1024, 256):
                model(torch.randn(batch, width, device="cuda")).sum()
        del model, layers
        torch.cuda.empty_cache()
    torch.cuda.synchronize()
    return []


def job_varlen_checkpointing(torch, pools):
    """A llama-like decoder trained at variable sequence lengths with activation checkpointing."""
    import torch.utils.checkpoint as checkpoint

    torch.manual_seed(0)
    width, depth = 1024, 6
    blocks = torch.nn.ModuleList(
        torch.nn.TransformerEncoderLayer(width, 16, 4 * width, dropout=0.0, batch_first=True, norm_first=True,
                                         activation="gelu") for _ in range(depth)).cuda()
    opt = torch.optim.AdamW(blocks.parameters(), lr=1e-4)
    lengths = [int(x) for x in torch.randint(96, 1536, (14,), generator=torch.Generator().manual_seed(7))]
    for seq in lengths:
        h = torch.randn(4, seq, width, device="cuda", requires_grad=True)
        for block in blocks:
            h = checkpoint.checkpoint(block, h, use_reentrant=False)
        train_step(opt, h.float().pow(2).mean())
    torch.cuda.synchronize()
    return [blocks, opt]


def job_varres_fcn(torch, pools):
    """A fully convolutional segmentation net (encoder-decoder) trained at varying image sizes."""
    torch.manual_seed(0)
    nn = torch.nn

    def conv(i, o):
        return nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU())

    model = nn.Sequential(conv(3, 32), nn.MaxPool2d(2), conv(32, 64), nn.MaxPool2d(2), conv(64, 128),
                          nn.Upsample(scale_factor=2), conv(128, 64), nn.Upsample(scale_factor=2), conv(64, 32),
                          nn.Conv2d(32, 21, 1)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    sizes = [(256, 256), (384, 512), (320, 320), (512, 384), (448, 448), (256, 512), (384, 384), (512, 512)]
    for h, w in sizes:
        x = torch.randn(8, 3, h, w, device="cuda")
        target = torch.randint(0, 21, (8, h, w), device="cuda")
        train_step(opt, nn.functional.cross_entropy(model(x), target))
    torch.cuda.synchronize()
    return [model, opt]


JOBS = {
    "graphs_shared_pool": job_graphs_shared_pool,
    "mempool_kv_cache": job_mempool_kv_cache,
    "graphed_callables": job_graphed_callables,
    "compile_reduce_overhead": job_compile_reduce_overhead,
    "capped_retry": job_capped_retry,
    "empty_cache_steps": job_empty_cache_steps,
    "graph_release": job_graph_release,
    "graphs_eager_between": job_graphs_eager_between,
    "graphs_pool_released": job_graphs_pool_released,
    "compile_default_training": job_compile_default_training,
    "capped_varlen": job_capped_varlen,
    "models_in_turn": job_models_in_turn,
    "varlen_checkpointing": job_varlen_checkpointing,
    "varres_fcn": job_varres_fcn,
}
# Jobs run under a cap found by probing: the smallest multiple of the uncapped allocated peak that
# completes with at least one release-and-retry.
CAPPED_JOBS = ("capped_retry", "capped_varlen")


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
    and is not a release-and-retry (not right after a free, and followed at once by a
    segment_alloc that would pass the most ever reserved).
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
    found, i = [], 0
    while i < len(trace):
        a = trace[i]["action"]
        if a not in ("segment_free", "segment_unmap"):
            e = trace[i]
            if a == "segment_alloc":
                segments[e["addr"]] = [e["size"], 0, alloc_pools.get(i, (0, 0))]
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
        retry = (not after_free and end < len(trace) and trace[end]["action"] in ("segment_alloc", "segment_map")
                 and before[i] + trace[end]["size"] > peak)
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
