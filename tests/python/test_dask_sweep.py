"""memreplay.dask on a real Dask cluster (a scheduler and two worker processes): its lines are those of
`memreplay sweep` task for task, also when a worker is killed mid-sweep, when traces are scattered rather
than read from a shared path, and when a sweep is resumed from its output file."""

from __future__ import annotations

import json
import os
import signal
import tempfile
import threading
from pathlib import Path

import distributed
import pytest

import memreplay
import memreplay.dask
from conftest import run_cli

NAMES = ["gpt2_train.default", "resnet50_train.default", "vit_infer_varbatch.default", "multistream_pipeline.default",
         "gpt2_train.truncated"]
POLICIES = ["pytorch", "pytorch:expandable_segments:True", "memreplay"]
CAPACITIES = ["none", "fit", "2GiB"]


@pytest.fixture(scope="module")
def traces(imported, tmp_path_factory):
    missing = tmp_path_factory.mktemp("missing") / "missing.mrt"  # an error line, and the sweep goes on
    return [str(imported(name)) for name in NAMES] + [str(missing)]


@pytest.fixture(scope="module")
def cli_lines(traces, tmp_path_factory):
    """What `memreplay sweep -j2` writes for the same tasks, by task key, the run time dropped."""
    out = tmp_path_factory.mktemp("cli") / "sweep.jsonl"
    policies = [arg for policy in POLICIES for arg in ("--policy", policy)]
    run_cli("sweep", *traces, *policies, "--capacity", ",".join(CAPACITIES), "-j", "2", "-o", out)
    return by_key(out.read_text().splitlines())


@pytest.fixture(scope="module")
def client():
    # The worker processes import memreplay from where this process does.
    package_root = str(Path(memreplay.__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as c:
            yield c


def by_key(lines):
    out = {}
    for line in lines:
        record = json.loads(line)
        record.pop("replay_seconds", None)
        key = memreplay.dask.task_key(record)
        assert key not in out, f"task {key} twice"
        out[key] = record
    return out


def test_the_workers_run_the_function_memreplay_sweep_runs(client):
    assert all(client.run(lambda: memreplay.dask.run_sweep_task_function() is not None).values())


def test_lines_are_those_of_memreplay_sweep(client, traces, cli_lines):
    results = memreplay.dask.sweep(client, traces, POLICIES, CAPACITIES)
    assert len(results) == len(traces) * len(POLICIES) * len(CAPACITIES)
    assert by_key(results.lines) == cli_lines
    errors = [r for r in results.records() if r["status"] == "error"]
    assert {r["trace"] for r in errors} == {traces[-1]}
    frame = results.to_pandas()
    assert len(frame) == len(results) and "reserved_peak" in frame.columns


def test_a_worker_killed_mid_sweep_loses_nothing(client, traces, cli_lines, tmp_path):
    pids = client.run(os.getpid)
    victim = sorted(pids)[0]
    killed = threading.Event()
    busy_at_kill = []

    def kill_after_three(line, seen=[]):
        seen.append(line)
        if len(seen) == 3 and not killed.is_set():
            busy_at_kill.extend(client.processing().get(victim, ()))
            os.kill(pids[victim], signal.SIGKILL)
            killed.set()

    output = tmp_path / "out.jsonl"
    results = memreplay.dask.sweep(client, traces, POLICIES, CAPACITIES, output=str(output), on_result=kill_after_three)
    assert killed.is_set()
    assert busy_at_kill, "the killed worker was running a task"
    assert by_key(results.lines) == cli_lines
    assert by_key(output.read_text().splitlines()) == cli_lines  # each task once in the file too
    client.wait_for_workers(2)


def test_scattered_traces_are_sent_once_and_give_the_same_lines(client, traces, cli_lines, tmp_path):
    present = traces[:-1]
    results = memreplay.dask.sweep(client, present, POLICIES, CAPACITIES, transfer="scatter")
    expected = {k: v for k, v in cli_lines.items() if v["trace"] in present}
    assert by_key(results.lines) == expected
    cached = list(Path(tempfile.gettempdir(), "memreplay-dask-traces").glob("*.mrt"))
    assert len({p.name for p in cached}) >= len(present)


def test_resume_from_a_torn_output_runs_only_what_is_missing(client, traces, cli_lines, tmp_path):
    output = tmp_path / "out.jsonl"
    memreplay.dask.sweep(client, traces, POLICIES, CAPACITIES, output=str(output))
    lines = output.read_text().splitlines()
    output.write_text("\n".join(lines[:10]) + "\n" + lines[10][: len(lines[10]) // 2])  # killed mid-write
    ran = []
    results = memreplay.dask.sweep(client, traces, POLICIES, CAPACITIES, output=str(output), on_result=ran.append)
    assert len(ran) == len(lines) - 10
    assert by_key(output.read_text().splitlines()) == cli_lines
    assert by_key(results.lines) == cli_lines


def test_capacity_keys_match_the_lines(client, traces):
    results = memreplay.dask.sweep(client, traces[:1], ["pytorch"], ["1GiB", "1500MB", 3 << 30])
    assert [r["capacity"] for r in results.records()] == [1 << 30, 1500 * 10**6, 3 << 30]
