#!/usr/bin/env python3
"""The training job tools/gpu/record_check.sh records: GPT-2 small (transformers, random init,
nothing downloaded) trained for a few steps on random tokens with bf16 autocast.

  record_job.py --steps 6 --stats stats.json
      train; write the allocator's own numbers (max_memory_reserved, memory_stats) to stats.json
  record_job.py --overhead --stats overhead.json --trace-dir DIR
      step times in one process: first with no recorder ever attached, then pairs of steps with
      the live recorder on and off in random order (the tracker stays attached once attached)
  record_job.py --steps 100000 --progress FILE
      train until killed, appending each finished step to FILE
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import torch


def build(batch: int, seq: int):
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config()  # GPT-2 small: 12 layers, 768 wide, 50257 tokens
    model = GPT2LMHeadModel(config).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    generator = torch.Generator(device="cuda").manual_seed(0)

    def step() -> None:
        tokens = torch.randint(0, config.vocab_size, (batch, seq), device="cuda", generator=generator)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(tokens, labels=tokens).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return step


def timed_steps(step, count: int) -> list:
    times = []
    for _ in range(count):
        torch.cuda.synchronize()
        start = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return times


def allocator_stats() -> dict:
    torch.cuda.synchronize()
    s = torch.cuda.memory_stats()
    return {
        "max_memory_reserved": torch.cuda.max_memory_reserved(),
        "max_memory_allocated": torch.cuda.max_memory_allocated(),
        "num_device_alloc": s.get("num_device_alloc"),
        "num_device_free": s.get("num_device_free"),
        "num_alloc_retries": s.get("num_alloc_retries"),
        "num_ooms": s.get("num_ooms"),
        "allocations": s.get("allocation.all.allocated"),
        "segments": s.get("segment.all.allocated"),
        "reserved_bytes_now": s.get("reserved_bytes.all.current"),
        "allocator_backend": torch.cuda.get_allocator_backend(),
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(),
    }


def train(args) -> None:
    step = build(args.batch, args.seq)
    times = []
    for i in range(args.steps):
        times += timed_steps(step, 1)
        if args.progress:
            with open(args.progress, "a") as f:
                f.write(f"{os.getpid()} {i + 1}\n")
    result = allocator_stats()
    result.update(steps=args.steps, batch=args.batch, seq=args.seq, step_seconds=times)
    if args.stats:
        with open(args.stats, "w") as f:
            json.dump(result, f, indent=2)


def timed_step(step) -> tuple:
    """(wall seconds, this thread's CPU seconds) of one synchronized step."""
    torch.cuda.synchronize()
    wall, cpu = time.perf_counter(), time.thread_time()
    step()
    torch.cuda.synchronize()
    return time.perf_counter() - wall, time.thread_time() - cpu


def overhead(args) -> None:
    """Step time with the live recorder on vs off, in one process.

    Slow drifts in this machine's speed (step times jump between ~36 and ~43 ms for dozens of
    steps, with or without a recorder) swamp a 1% effect when on and off run in separate blocks.
    So after a block that has never attached the tracker (what PyTorch costs untouched), the steps
    come in pairs, one with the recorder on and one with it off, in a random order per pair; the
    overhead is the median of the pairs' relative differences. "Off" is the tracker attached with
    nothing to feed (PyTorch's trackers cannot be detached), the state between two recordings.
    The trace written during the paired phase has holes (the off steps) and is thrown away."""
    import random

    import memreplay.torch

    step = build(args.batch, args.seq)
    for _ in range(args.warmup):
        timed_step(step)
    pristine = [timed_step(step) for _ in range(args.pristine_steps)]
    recording = memreplay.torch.start(os.path.join(args.trace_dir, "overhead.mrt"))
    if not recording.active:
        raise SystemExit("memreplay: the live recorder did not start (see above)")
    native, handle = recording._native, recording._handle
    order = random.Random(0)
    on, off, before_events = [], [], recording.stats()["recorded"]
    for _ in range(args.pairs):
        for recording_on in order.sample([True, False], 2):
            native.set_current(handle if recording_on else 0)
            (on if recording_on else off).append(timed_step(step))
    native.set_current(handle)
    recorded = recording.stop()["recorded"] - before_events
    os.remove(recording.path)

    median = statistics.median
    walls = lambda xs: [x[0] for x in xs]
    cpus = lambda xs: [x[1] for x in xs]
    pair_wall = sorted(a[0] / b[0] - 1.0 for a, b in zip(on, off))
    pair_cpu = sorted(a[1] / b[1] - 1.0 for a, b in zip(on, off))
    n = len(pair_wall)
    # A distribution-free 95% interval for the median of the pairs (order statistics).
    lo, hi = max(0, int(n / 2 - 0.98 * n ** 0.5)), min(n - 1, int(n / 2 + 0.98 * n ** 0.5))
    result = {
        "pairs": n,
        "events_per_step": recorded / max(1, len(on)),
        "median_step_s": {"never_attached": median(walls(pristine)), "recording": median(walls(on)),
                          "attached_not_recording": median(walls(off))},
        "median_thread_cpu_s": {"never_attached": median(cpus(pristine)), "recording": median(cpus(on)),
                                "attached_not_recording": median(cpus(off))},
        "overhead_paired_median": median(pair_wall),
        "overhead_paired_median_95ci": [pair_wall[lo], pair_wall[hi]],
        "overhead_paired_mean": statistics.fmean(pair_wall),
        "cpu_overhead_paired_median": median(pair_cpu),
        "overhead_vs_never_attached": median(walls(on)) / median(walls(pristine)) - 1.0,
        "attached_vs_never_attached": median(walls(off)) / median(walls(pristine)) - 1.0,
        "step_seconds": {"never_attached": pristine, "recording": on, "attached_not_recording": off},
    }
    with open(args.stats, "w") as f:
        json.dump(result, f, indent=2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=512)
    parser.add_argument("--stats", help="write the numbers here (JSON)")
    parser.add_argument("--progress", help="append 'PID STEP' after each step")
    parser.add_argument("--overhead", action="store_true")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--pristine-steps", type=int, default=60)
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--trace-dir", default=".")
    args = parser.parse_args()
    overhead(args) if args.overhead else train(args)


if __name__ == "__main__":
    main()
