"""The fleet sweep's local scaling: `memreplay sweep -j1` against `-j2` and against memreplay.dask on a
LocalCluster of two worker processes, the same tasks each time (every real trace x six policies, capacity
fit), in interleaved rounds; medians, with the load average before and after each run (the machine is
shared: a run under load says little). The Dask time is the sweep() call's, the cluster already up.

    tools/test_python.sh                     # once: the package installed into build/python-venv
    build/python-venv/bin/python tools/bench/sweep_scaling.py [--rounds 3] [--out sweep_scaling.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
POLICIES = ["pytorch", "pytorch:expandable_segments:True", "memreplay", "gmlake", "cuda_async", "rmm_pool"]


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def import_real_traces(cli: str, folder: Path) -> list:
    paths = []
    for snapshot in sorted((ROOT / "tests/data/real/traces").glob("*.pickle.xz")):
        out = folder / (snapshot.name[: -len(".pickle.xz")] + ".mrt")
        subprocess.run([cli, "import", str(snapshot), "-o", str(out)], check=True, capture_output=True)
        paths.append(str(out))
    return paths


def cli_sweep(cli: str, traces: list, jobs: int, out: Path) -> float:
    out.unlink(missing_ok=True)
    command = [cli, "sweep", *traces, "--capacity", "fit", "-j", str(jobs), "-o", str(out)]
    for policy in POLICIES:
        command += ["--policy", policy]
    start = time.monotonic()
    subprocess.run(command, check=True, capture_output=True)
    return time.monotonic() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default="sweep_scaling.json")
    args = parser.parse_args()
    import distributed
    import memreplay.dask

    cli = shutil.which("memreplay") or str(ROOT / "build/tools/memreplay")
    work = Path(tempfile.mkdtemp(prefix="sweep-scaling-"))
    traces = import_real_traces(cli, work)
    runs = {"j1": [], "j2": [], "dask2": []}
    package_root = str(Path(memreplay.__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            for _ in range(args.rounds):
                for name, jobs in (("j1", 1), ("j2", 2)):
                    before = load()
                    seconds = cli_sweep(cli, traces, jobs, work / f"{name}.jsonl")
                    runs[name].append({"seconds": seconds, "load_before": before, "load_after": load()})
                before = load()
                start = time.monotonic()
                results = memreplay.dask.sweep(client, traces, POLICIES, ["fit"])
                seconds = time.monotonic() - start
                assert len(results) == len(traces) * len(POLICIES)
                runs["dask2"].append({"seconds": seconds, "load_before": before, "load_after": load()})
                print({k: round(v[-1]["seconds"], 2) for k, v in runs.items()}, "load", load(), flush=True)
    median = {k: statistics.median(r["seconds"] for r in v) for k, v in runs.items()}
    summary = {"tasks": len(traces) * len(POLICIES), "policies": POLICIES, "capacity": "fit", "cpus": os.cpu_count(),
               "median_seconds": median, "j2_speedup": median["j1"] / median["j2"],
               "dask2_over_j2": median["dask2"] / median["j2"], "runs": runs}
    Path(args.out).write_text(json.dumps(summary, indent=2))
    print(f"{summary['tasks']} tasks: -j1 {median['j1']:.2f} s, -j2 {median['j2']:.2f} s "
          f"({summary['j2_speedup']:.2f}x), Dask 2 workers {median['dask2']:.2f} s "
          f"({summary['dask2_over_j2']:.2f}x of -j2); medians of {args.rounds} rounds")
    shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
