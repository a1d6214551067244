#!/usr/bin/env python3
"""The training job tools/gpu_record_check.sh records: GPT-2 small (transformers, random init,
nothing downloaded) trained for a few steps on random tokens with bf16 autocast.

  gpu_record_job.py --steps 6 --stats stats.json
      train; write the allocator's own numbers (max_memory_reserved, memory_stats) to stats.json
  gpu_record_job.py --overhead --stats overhead.json --trace-dir DIR
      step times in one process: first with no recorder ever attached, then alternating rounds
      with the live recorder on and off (the tracker stays attached once attached)
  gpu_record_job.py --steps 100000 --progress FILE
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


def overhead(args) -> None:
    import memreplay.torch

    step = build(args.batch, args.seq)
    timed_steps(step, args.warmup)
    pristine = timed_steps(step, args.steps_per_round * 2)  # no tracker attached yet
    on, off, recorded = [], [], 0
    for r in range(args.rounds):
        recording = memreplay.torch.start(os.path.join(args.trace_dir, f"overhead_{r}.mrt"))
        if not recording.active:
            raise SystemExit("memreplay: the live recorder did not start (see above)")
        on += timed_steps(step, args.steps_per_round)
        recorded += recording.stop()["recorded"]
        off += timed_steps(step, args.steps_per_round)
    median = statistics.median
    result = {
        "steps_per_round": args.steps_per_round,
        "rounds": args.rounds,
        "median_step_s": {"never_attached": median(pristine), "recording": median(on),
                          "attached_not_recording": median(off)},
        "overhead_vs_never_attached": median(on) / median(pristine) - 1.0,
        "overhead_vs_attached_off": median(on) / median(off) - 1.0,
        "events_per_step": recorded / (args.rounds * args.steps_per_round),
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
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps-per-round", type=int, default=20)
    parser.add_argument("--trace-dir", default=".")
    args = parser.parse_args()
    overhead(args) if args.overhead else train(args)


if __name__ == "__main__":
    main()
