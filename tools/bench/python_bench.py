#!/usr/bin/env python3
"""The Python API's costs, side by side with what they are held against, in one run:

  1. memreplay.replay() of gpt2_generate.default vs the same replay in C++ (replay_bench's
     BM_RunReplayGpt2Generate: run_replay on the same .mrt), median of rounds: target within 5%.
  2. memreplay.load() of gpt2_generate's snapshot dict (what torch.cuda.memory._snapshot() returns)
     vs pickle.dumps of the same dict alone: target no slower.
  3. 8 Python threads each replaying one of 8 traces at once vs one thread replaying them in turn:
     target >= 1.8x on 2 cores (the GIL is released during replays). The 8 traces are 8 copies of
     gpt2_generate (equal work); the 8 different real traces are shown too.
  4. with --pip-install: `pip install .` of a clean clone of this checkout into a fresh venv (the
     whole C++ build, without tests and benchmarks), timed once.

Run in a venv with the package installed (tools/test_python.sh makes BUILD/python-venv):
  BUILD/python-venv/bin/python tools/bench/python_bench.py [--build BUILD] [--rounds N] [--pip-install]
The machine's load (uptime) is printed before and after: the figures mean little under load.
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import pickle
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import memreplay

REPO = Path(__file__).resolve().parents[2]
TRACES = REPO / "tests" / "data" / "real" / "traces"
GENERATE = TRACES / "gpt2_generate.default.pickle.xz"


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def median_seconds(work, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def cpp_replay_seconds(build: Path, policy_case: str, rounds: int) -> float:
    bench = build / "tools" / "replay_bench"
    if not bench.is_file():
        sys.exit(f"{bench}: not built (ninja -C {build} replay_bench)")
    done = subprocess.run([str(bench), f"--benchmark_filter=BM_RunReplayGpt2Generate/{policy_case}$",
                           f"--benchmark_repetitions={rounds}", "--benchmark_format=json",
                           "--benchmark_report_aggregates_only=true"], capture_output=True, text=True, check=True)
    runs = json.loads(done.stdout)["benchmarks"]
    median = next(r for r in runs if r.get("aggregate_name") == "median")
    return median["real_time"] / 1e3  # ms -> s


def replay_versus_cpp(build: Path, rounds: int) -> None:
    trace = memreplay.load(GENERATE)
    for policy, case in (("pytorch", "pytorch"), ("pytorch:expandable_segments:True", "pytorch_expandable")):
        memreplay.replay(trace, policy=policy)  # warm: page cache, allocator
        python = median_seconds(lambda: memreplay.replay(trace, policy=policy), rounds)
        cpp = cpp_replay_seconds(build, case, rounds)
        print(f"replay gpt2_generate {policy:34s} memreplay.replay() {python * 1e3:8.1f} ms   C++ run_replay "
              f"{cpp * 1e3:8.1f} ms   python/C++ {python / cpp:.3f}  (target <= 1.05)")


def dict_load_versus_pickle(rounds: int) -> None:
    with lzma.open(GENERATE) as f:
        snapshot = pickle.load(f)
    memreplay.load(snapshot)
    dumps = median_seconds(lambda: pickle.dumps(snapshot), rounds)
    load = median_seconds(lambda: memreplay.load(snapshot), rounds)
    entries = sum(len(t) for t in snapshot["device_traces"])
    print(f"snapshot dict of gpt2_generate ({entries} trace entries): memreplay.load(dict) {load * 1e3:8.1f} ms   "
          f"pickle.dumps(dict) alone {dumps * 1e3:8.1f} ms   load/dumps {load / dumps:.3f}  (target <= 1.0)")


def threads_versus_one(traces, rounds: int, label: str) -> None:
    policy = "pytorch"

    def one_thread():
        for t in traces:
            memreplay.replay(t, policy=policy)

    def eight_threads():
        threads = [threading.Thread(target=memreplay.replay, args=(t,), kwargs={"policy": policy}) for t in traces]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    one_thread()
    sequential = median_seconds(one_thread, rounds)
    parallel = median_seconds(eight_threads, rounds)
    print(f"{len(traces)} traces ({label}): one thread {sequential * 1e3:8.1f} ms   {len(traces)} threads "
          f"{parallel * 1e3:8.1f} ms   speed-up {sequential / parallel:.2f}x on {os.cpu_count()} cores "
          "(target >= 1.8x)")


def pip_install_from_clean_clone() -> None:
    with tempfile.TemporaryDirectory(prefix="memreplay-pip-") as scratch:
        clone = Path(scratch) / "memreplay"
        subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(REPO), str(clone)], check=True)
        status = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True).stdout
        if status.strip():
            print("  (the checkout has uncommitted changes: the clone builds the last commit)")
        venv = Path(scratch) / "venv"
        subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", str(venv)], check=True)
        env = {k: v for k, v in os.environ.items() if k != "MEMREPLAY_BUILD_DIR"}
        start = time.perf_counter()
        subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", "--no-build-isolation", "--no-index",
                        "--no-deps", "."], cwd=clone, env=env, check=True)
        seconds = time.perf_counter() - start
        ok = subprocess.run([str(venv / "bin" / "memreplay"), "--version"], capture_output=True, text=True).stdout
        print(f"pip install . from a clean clone: {seconds:.0f} s ({ok.strip()})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", type=Path, default=REPO / "build")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--pip-install", action="store_true")
    args = parser.parse_args()
    print(f"load average before: {load_average()}  ({os.cpu_count()} cores)")
    replay_versus_cpp(args.build, args.rounds)
    dict_load_versus_pickle(args.rounds)
    with tempfile.TemporaryDirectory(prefix="memreplay-bench-") as scratch:
        generate = memreplay.load(GENERATE)
        copies = [memreplay.load(shutil.copyfile(generate.path, Path(scratch) / f"copy{i}.mrt")) for i in range(8)]
        threads_versus_one(copies, args.rounds, "8 copies of gpt2_generate")
        mixed = [memreplay.load(p) for p in sorted(TRACES.glob("*.pickle.xz")) if "truncated" not in p.name][:8]
        threads_versus_one(mixed, args.rounds, "the real traces")
    if args.pip_install:
        pip_install_from_clean_clone()
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    main()
