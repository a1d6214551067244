#!/usr/bin/env python3
"""The replay and report half of tools/gpu/check.sh (standard library only: it runs on the GPU machine).

For every trace: the pytorch policy (default, expandable_segments:True, max_split_size_mb:64, and the
capped112 capacity of the ground truth) on --device cuda:0 and on sim must agree exactly (reserved
and allocated peaks, device alloc/free calls, OOM point); cuda_async's reserved peak on the real
pool is set beside the simulator's model and the live run's max_memory_reserved. Then the test and
benchmark results that check.sh left in OUT. Writes OUT/gpu_check.json and OUT/gpu_check.md and
prints the table; exits 1 if anything failed or disagreed.
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile

PYTORCH_CONFIGS = ["default", "expandable", "maxsplit64", "capped112"]
SPECS = {
    "default": "pytorch",
    "expandable": "pytorch:expandable_segments:True",
    "maxsplit64": "pytorch:max_split_size_mb:64",
    "capped112": "pytorch",
    "cuda_async": "cuda_async",
}
COMPARED = ["reserved_peak", "allocated_peak", "requested_peak", "device_alloc_calls", "device_free_calls",
            "oom_at_event", "events", "skipped_events"]
MiB = 1 << 20
TARGET_EVENTS_PER_S = 3.3e6  # PyTorch's own allocator from C++, gpt2_generate, warm
TARGET_CACHE_P50_NS = 150


def run_replay(memreplay, trace, spec, device, capacity, tmp):
    path = os.path.join(tmp, "replay.json")
    command = [memreplay, "replay", trace, "--policy", spec, "--device", device, "--lenient", "--json", path]
    if capacity:
        command += ["--capacity", str(capacity)]
    done = subprocess.run(command, capture_output=True, text=True)
    # Exit 1 is a replay that ran out of memory (README, `replay`): a result, with its JSON.
    if done.returncode not in (0, 1) or not os.path.exists(path):
        return {"error": (done.stderr or done.stdout).strip()[-500:], "exit_status": done.returncode}
    with open(path) as f:
        metrics = json.load(f)
    os.remove(path)
    metrics.pop("timeline", None)
    return metrics


def gpu_identity():
    try:
        line = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                              capture_output=True, text=True, check=True).stdout.splitlines()[0]
        name, driver = [x.strip() for x in line.split(",")]
        return name, driver
    except Exception as e:  # no nvidia-smi: say so in the report
        return f"unknown ({e.__class__.__name__})", "unknown"


def mib(value):
    return "-" if value is None else f"{value / MiB:,.1f}"


def replays(args, truth):
    rows, async_rows = [], []
    traces = sorted(f for f in os.listdir(args.traces) if f.endswith(".mrt"))
    memreplay = os.path.join(args.build, "tools", "memreplay")
    with tempfile.TemporaryDirectory() as tmp:
        for file in traces:
            trace = os.path.join(args.traces, file)
            name = file[:-len(".mrt")]
            workload = name.split(".")[0]
            known = truth["workloads"].get(workload)
            for config in PYTORCH_CONFIGS + ["cuda_async"]:
                capacity = None
                if config == "capped112":
                    if not known:
                        continue
                    capacity = known["pytorch_replay"]["capped112"]["cap_bytes"]
                gpu = run_replay(memreplay, trace, SPECS[config], "cuda:0", capacity, tmp)
                sim = run_replay(memreplay, trace, SPECS[config], "sim", capacity, tmp)
                row = {"trace": name, "config": config, "policy": SPECS[config], "capacity": capacity,
                       "gpu": gpu, "sim": sim}
                if config == "cuda_async":
                    live = known["asyncpool"]["max_memory_reserved"] if known and name.endswith(".default") else None
                    row["live_max_memory_reserved"] = live
                    row["ok"] = "error" not in gpu and "error" not in sim and not gpu.get("oom_at_event")
                    async_rows.append(row)
                else:
                    row["differences"] = {k: [gpu.get(k), sim.get(k)] for k in COMPARED if gpu.get(k) != sim.get(k)}
                    row["ok"] = "error" not in gpu and "error" not in sim and not row["differences"]
                    reference = known["pytorch_replay"].get(config) if known and name.endswith(".default") else None
                    if reference and "error" not in gpu:
                        row["pytorch_reserved_peak"] = reference["reserved_peak"]
                        row["equals_pytorch"] = (gpu.get("reserved_peak") == reference["reserved_peak"] and
                                                 gpu.get("device_alloc_calls") == reference["num_device_alloc"] and
                                                 gpu.get("oom_at_event") == reference["oom_at_event"])
                    rows.append(row)
                print(f"   {name:36s} {config:11s} {'ok' if row['ok'] else 'DIFFERS'}", file=sys.stderr)
    return rows, async_rows


def test_results(path):
    if not os.path.exists(path):
        return {"error": "no gtest.json (the test binary did not run)"}
    with open(path) as f:
        report = json.load(f)
    passed, failed, skipped = [], [], []
    for suite in report.get("testsuites", []):
        for test in suite.get("testsuite", []):
            name = f"{suite['name']}.{test['name']}"
            if test.get("failures"):
                failed.append({"test": name, "failures": [x.get("failure", "")[:400] for x in test["failures"]]})
            elif test.get("result") == "SKIPPED" or test.get("status") == "NOTRUN":
                skipped.append(name)
            else:
                passed.append(name)
    return {"passed": len(passed), "failed": failed, "skipped": skipped, "tests": passed}


def bench_results(path):
    if not os.path.exists(path):
        return {"error": "no bench.json"}
    with open(path) as f:
        report = json.load(f)
    cases = {}
    for b in report.get("benchmarks", []):
        name = b["name"].split("/min_")[0].split("/iterations")[0].split("/manual_time")[0]
        if b.get("error_occurred"):
            cases[name] = {"error": b.get("error_message")}
            continue
        case = {k: v for k, v in b.items() if k.endswith("_ns") or k.endswith("_n") or k in
                ("items_per_second", "real_time", "time_unit", "iterations", "device_call_ms")}
        cases[name] = case
    return {"context": report.get("context", {}), "cases": cases}


def markdown(report):
    t, lines = report["tests"], []
    lines.append(f"# memreplay GPU check, {report['date']}")
    lines.append(f"{report['gpu']}, driver {report['driver']}, commit {report['commit']}")
    lines.append("")
    if "error" in t:
        lines.append(f"**Tests**: {t['error']}")
    else:
        lines.append(f"**Tests**: {t['passed']} passed, {len(t['failed'])} failed, {len(t['skipped'])} skipped"
                     + "".join(f"\n- FAILED {x['test']}" for x in t["failed"]))
    lines.append("")
    leak = [x for x in t.get("tests", []) if "LeavesNoMemoryBehind" in x]
    leak_failed = [x["test"] for x in t.get("failed", []) if "LeavesNoMemoryBehind" in x["test"]]
    lines.append(f"**No leak** (free memory before = after every replay): {len(leak)} passed, "
                 f"{len(leak_failed)} failed" + ("" if leak or leak_failed else " (not run)"))
    lines.append("")
    lines.append("**pytorch policy, --device cuda:0 vs sim**: reserved MiB, device allocs/frees, OOM; "
                 "ok = equal on both (and =PT: equal to PyTorch's own replay)")
    lines.append("")
    lines.append("| trace | " + " | ".join(PYTORCH_CONFIGS) + " |")
    lines.append("|---|" + "---|" * len(PYTORCH_CONFIGS))
    by_trace = {}
    for r in report["pytorch"]:
        by_trace.setdefault(r["trace"], {})[r["config"]] = r
    for trace, configs in by_trace.items():
        cells = []
        for config in PYTORCH_CONFIGS:
            r = configs.get(config)
            if r is None:
                cells.append("-")
                continue
            g = r["gpu"]
            if "error" in g or "error" in r["sim"]:
                cells.append("ERROR " + (g.get("error") or r["sim"].get("error", ""))[-50:])
                continue
            cell = f"{mib(g['reserved_peak'])} {g['device_alloc_calls']}/{g['device_free_calls']}"
            if g.get("oom_at_event") is not None:
                cell += f" oom@{g['oom_at_event']}"
            cell += " ok" if r["ok"] else " DIFF " + ",".join(r["differences"])
            if r.get("equals_pytorch") is not None:
                cell += " =PT" if r["equals_pytorch"] else " !=PT"
            cells.append(cell)
        lines.append(f"| {trace} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("**cuda_async reserved peak: real pool vs simulator model vs live PyTorch run** (MiB)")
    lines.append("")
    lines.append("| trace | gpu | sim model | live | gpu - live | sim - gpu |")
    lines.append("|---|---:|---:|---:|---:|---:|")
    for r in report["cuda_async"]:
        g, s, live = r["gpu"].get("reserved_peak"), r["sim"].get("reserved_peak"), r["live_max_memory_reserved"]
        lines.append(f"| {r['trace']} | {mib(g)} | {mib(s)} | {mib(live)} | "
                     f"{mib(g - live) if g is not None and live else '-'} | {mib(s - g) if g is not None and s is not None else '-'} |")
    lines.append("")
    lines.append("**Timing, gpt2_generate** (gpu_replay_bench; targets: >= 3.3 M events/s, cache p50 <= 150 ns)")
    lines.append("")
    lines.append("| case | events/s | ms/replay | device ms | alloc cache p50 / p99 ns | alloc device p50 ns | free p50 ns | timer ns |")
    lines.append("|---|---:|---:|---:|---:|---:|---:|---:|")
    cases = report["bench"].get("cases", {})
    for device in ("cuda:0", "sim"):
        for policy in ("pytorch", "pytorch:expandable_segments:True", "cuda_async"):
            replay = cases.get(f"BM_Replay/{device}/{policy}", {})
            latency = cases.get(f"BM_AllocateLatency/{device}/{policy}", {})
            if "error" in replay:
                lines.append(f"| {device} {policy} | {replay['error'][:70]} | | | | | | |")
                continue
            eps = replay.get("items_per_second")
            lines.append(f"| {device} {policy} | {f'{eps / 1e6:.2f} M' if eps else '-'} | "
                         f"{replay.get('real_time', 0):.1f} | {replay.get('device_call_ms', 0):.1f} | "
                         f"{latency.get('alloc_cache_p50_ns', '-')} / {latency.get('alloc_cache_p99_ns', '-')} | "
                         f"{latency.get('alloc_device_p50_ns', '-')} | {latency.get('free_p50_ns', '-')} | "
                         f"{latency.get('timer_ns', '-')} |")
    lines.append("")
    lines.append(f"**Verdict**: {report['verdict']}")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", required=True)
    parser.add_argument("--traces", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--truth", required=True)
    parser.add_argument("--commit", default="unknown")
    args = parser.parse_args()
    with open(args.truth) as f:
        truth = json.load(f)
    name, driver = gpu_identity()
    pytorch_rows, async_rows = replays(args, truth)
    report = {
        "schema": 1,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "gpu": name, "driver": driver, "commit": args.commit,
        "tests": test_results(os.path.join(args.out, "gtest.json")),
        "pytorch": pytorch_rows,
        "cuda_async": async_rows,
        "bench": bench_results(os.path.join(args.out, "bench.json")),
    }
    problems = []
    if "error" in report["tests"] or report["tests"]["failed"]:
        problems.append("tests failed")
    if not all(r["ok"] for r in pytorch_rows):
        problems.append("cuda and sim disagree")
    if not all(r["ok"] for r in async_rows):
        problems.append("cuda_async replays failed")
    cases = report["bench"].get("cases", {})
    speed = cases.get("BM_Replay/cuda:0/pytorch", {}).get("items_per_second")
    p50 = cases.get("BM_AllocateLatency/cuda:0/pytorch", {}).get("alloc_cache_p50_ns")
    report["targets"] = {"events_per_s": speed, "events_per_s_target": TARGET_EVENTS_PER_S,
                         "alloc_cache_p50_ns": p50, "alloc_cache_p50_ns_target": TARGET_CACHE_P50_NS}
    if speed is not None and speed < TARGET_EVENTS_PER_S:
        problems.append(f"replay {speed / 1e6:.2f} M events/s < 3.3 M")
    if p50 is not None and p50 > TARGET_CACHE_P50_NS:
        problems.append(f"cache p50 {p50:.0f} ns > 150 ns")
    report["verdict"] = "all agree, all passed" if not problems else "; ".join(problems)
    with open(os.path.join(args.out, "check.json"), "w") as f:
        json.dump(report, f, indent=1)
    table = markdown(report)
    with open(os.path.join(args.out, "gpu_check.md"), "w") as f:
        f.write(table)
    print(table)
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
