"""Where a live policy's step time goes, driven by tools/gpu/live_overhead_check.sh.

    live_overhead_job.py run WORKLOAD ALLOCATOR RESULT.json [TRACE.mrt]   one process, one allocator
    live_overhead_job.py report RESULTS_DIR OUT                           the comparison table

A run (the workloads and allocators of live_policy_job.py) writes:
  step_s          every step's wall time, after LIVE_WARMUP_STEPS, over LIVE_STEPS steps
  allocs_per_step the allocations a step makes (the allocator's own count over the timed steps)
  kernel_us       the GPU time of each of 5 profiled steps (torch.profiler: the summed durations of
                  the kernels, copies and memsets): what the GPU does, apart from how fast the CPU
                  launches it
  cpu_ops_us      the host time of the same 5 steps by operator (self time, the 40 largest)
  alloc_ns        the CPU cost of an allocation and its free from Python (torch.empty + del, with
                  deterministic mode's fill of new memory off), at sizes from 512 B to 64 MiB,
                  20,000 pairs after 1,000 of warm-up
The report gives, per workload and allocator, the median over runs of the median step, and each
run's ratio to the native run it was interleaved with.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import live_policy_job as job  # noqa: E402


def profiled_steps(torch, step, first: int, steps: int = 5) -> tuple[list[float], dict]:
    """The GPU time of each step, and the host's self time by operator over all of them."""
    from torch.profiler import ProfilerActivity, profile

    per_step, cpu_ops = [], {}
    for i in range(first, first + steps):
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            step(i)
            torch.cuda.synchronize()
        per_step.append(sum(e.time_range.elapsed_us() for e in prof.events()
                            if e.device_type == torch.autograd.DeviceType.CUDA))
        for average in prof.key_averages():
            if average.self_cpu_time_total > 0:
                cpu_ops[average.key] = cpu_ops.get(average.key, 0.0) + average.self_cpu_time_total
    largest = sorted(cpu_ops.items(), key=lambda kv: -kv[1])[:40]
    return per_step, dict(largest)


def allocations_so_far(torch, allocator: str) -> int:
    if allocator.startswith("policy:"):
        import memreplay.torch

        return memreplay.torch.live_stats()["allocation.all.allocated"]
    return torch.cuda.memory_stats()["allocation.all.allocated"]


def device_calls_so_far(allocator: str) -> int | None:
    """The policy's device calls (None under torch's own allocator, whose calls are not counted
    this way): where a policy calls the device during the profiled steps, their host time has it."""
    if not allocator.startswith("policy:"):
        return None
    import memreplay.torch

    return memreplay.torch.live_stats()["device_calls"]


def allocation_cost(torch) -> dict:
    torch.utils.deterministic.fill_uninitialized_memory = False
    sizes = [512, 4096, 65536, 1 << 20, 8 << 20, 64 << 20]
    out = {}
    for size in sizes:
        for _ in range(1000):
            t = torch.empty(size, dtype=torch.uint8, device="cuda")
            del t
        t0 = time.perf_counter()
        for _ in range(20000):
            t = torch.empty(size, dtype=torch.uint8, device="cuda")
            del t
        out[str(size)] = (time.perf_counter() - t0) / 20000 * 1e9
    return out


def run(workload: str, allocator: str, result_path: str, trace: str | None) -> None:
    torch = job.set_up(allocator, trace)
    step = job.WORKLOADS[workload](torch)
    times = []
    for i in range(job.WARMUP_STEPS + job.STEPS):
        if i == job.WARMUP_STEPS:
            allocations_before = allocations_so_far(torch, allocator)
        t0 = time.perf_counter()
        value = step(i)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
        float(value.item())
    allocs_per_step = (allocations_so_far(torch, allocator) - allocations_before) / job.STEPS
    calls = [device_calls_so_far(allocator)]
    kernels, cpu_ops = profiled_steps(torch, step, job.WARMUP_STEPS + job.STEPS)
    calls.append(device_calls_so_far(allocator))
    if trace:  # the trace ends here: the allocation-cost loop below is not the workload
        import memreplay.torch

        memreplay.torch.finish_trace()
    result = {"workload": workload, "allocator": allocator, "step_s": times[job.WARMUP_STEPS:],
              "median_step_s": statistics.median(times[job.WARMUP_STEPS:]), "allocs_per_step": allocs_per_step,
              "kernel_us": kernels, "cpu_ops_us": cpu_ops, "alloc_ns": allocation_cost(torch),
              "device_calls_before_and_after_profiled_steps": calls}
    with open(result_path, "w") as f:
        json.dump(result, f)


def report(folder: str, out: str) -> int:
    runs = []
    for name in sorted(os.listdir(folder)):
        if name.endswith(".json"):
            with open(os.path.join(folder, name)) as f:
                data = json.load(f)
            data["repeat"] = int(name.rsplit("_r", 1)[1].split(".")[0])
            runs.append(data)
    by = {}
    for r in runs:
        by.setdefault((r["workload"], r["allocator"]), []).append(r)
    lines = ["| workload | allocator | runs | median step ms (each run) | ratio to native, per run | "
             "allocations per step | GPU ms per step (median) | alloc + free ns at 512 B / 1 MiB / 64 MiB |",
             "|---|---|---|---|---|---|---|---|"]
    summary = []
    for (workload, allocator), group in sorted(by.items()):
        group.sort(key=lambda r: r["repeat"])
        natives = {r["repeat"]: r for r in by.get((workload, "native"), [])}
        medians = [r["median_step_s"] * 1e3 for r in group]
        ratios = [r["median_step_s"] / natives[r["repeat"]]["median_step_s"] for r in group if r["repeat"] in natives]
        kernel = statistics.median(k for r in group for k in r["kernel_us"]) / 1e3
        alloc = {s: statistics.median(r["alloc_ns"][s] for r in group) for s in group[0]["alloc_ns"]}
        allocs = statistics.median(r["allocs_per_step"] for r in group)
        cpu_ops = {}
        for r in group:
            for op, us in r["cpu_ops_us"].items():
                cpu_ops[op] = cpu_ops.get(op, 0.0) + us / len(group) / 5  # per step, mean over runs
        summary.append({"workload": workload, "allocator": allocator, "median_step_ms": medians,
                        "ratio_to_native": ratios, "allocs_per_step": allocs, "gpu_ms_per_step": kernel,
                        "alloc_ns": alloc, "cpu_us_per_step_by_op": cpu_ops,
                        "step_ms": [[t * 1e3 for t in r["step_s"]] for r in group]})
        lines.append(f"| {workload} | {allocator} | {len(group)} | {statistics.median(medians):.2f} "
                     f"({', '.join(f'{m:.2f}' for m in medians)}) | {', '.join(f'{x:+.1%}' for x in (r - 1 for r in ratios))} | "
                     f"{allocs:.1f} | {kernel:.2f} | {alloc['512']:.0f} / {alloc[str(1 << 20)]:.0f} / {alloc[str(64 << 20)]:.0f} |")
    with open(os.path.join(out, "live_overhead.json"), "w") as f:
        json.dump(summary, f, indent=1)
    with open(os.path.join(out, "live_overhead.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "run":
        run(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5] if len(sys.argv) > 5 else None)
    elif sys.argv[1] == "report":
        sys.exit(report(sys.argv[2], sys.argv[3]))
    else:
        sys.exit(f"unknown command {sys.argv[1]}")
