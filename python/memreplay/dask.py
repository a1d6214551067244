"""memreplay.dask: a fleet sweep on an existing Dask cluster, task for task what `memreplay sweep` does.

    from distributed import Client
    import memreplay.dask
    client = Client("scheduler:8786")
    results = memreplay.dask.sweep(client, ["runs/a.mrt", "runs/b.mrt"], ["pytorch", "memreplay"], ["fit"])
    results.lines          # the JSON lines `memreplay sweep` writes, one per task, in task order
    results.to_pandas()    # one row per task (pandas is optional)

Each task is one trace under one policy at one capacity ("none", "fit", a size such as "40GiB", or bytes),
run on a worker by the C++ function `memreplay sweep` runs per task (memreplay._core.run_sweep_task), so
its line is the one the CLI writes for it.

Traces reach the workers in one of two ways: transfer="shared" (the default) opens the paths on the workers,
for a filesystem every worker mounts; transfer="scatter" reads each trace once on the client and hands its
bytes to the cluster once (client.scatter), and each worker writes them to a local cache file once, so no
trace travels once per task.

A worker that dies mid-sweep loses nothing: the scheduler runs its tasks again elsewhere, and results are
kept by task key, so each task appears once. With output=FILE the lines are also appended to a JSON Lines
file as they arrive (each with one write()); tasks already in the file are skipped (resume), and the file is
what `memreplay sweep-summary` reads.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

__all__ = ["sweep", "run_task", "task_key", "capacity_key", "SweepResults"]

TraceList = Union[Sequence[str], Sequence[Tuple[str, str]], Dict[str, str]]


def task_key(line: Union[str, dict]) -> Tuple[str, str, str]:
    """(name, policy, capacity) of a result line: the identity of its task, as `memreplay sweep` keys it."""
    record = json.loads(line) if isinstance(line, str) else line
    capacity = record["capacity"]
    return record["name"], record["policy"], "none" if capacity is None else str(capacity)


class SweepResults:
    """The lines of a sweep, one per task in task order, and their records."""

    def __init__(self, lines: List[str]):
        self.lines = lines

    def __len__(self) -> int:
        return len(self.lines)

    def __iter__(self) -> Iterator[str]:
        return iter(self.lines)

    def records(self) -> List[dict]:
        return [json.loads(line) for line in self.lines]

    def to_pandas(self):
        """A DataFrame, one row per task (nested fields such as "fit" stay dicts); needs pandas."""
        import pandas

        return pandas.DataFrame.from_records(self.records())


def run_sweep_task_function():
    """The extension module's run_sweep_task: the C++ of `memreplay sweep`'s tasks."""
    from . import _core

    return _core.run_sweep_task


def run_task(trace: str, name: str, policy: str, capacity: Union[str, int], settings: Optional[dict] = None) -> str:
    """One task's JSON line: what `memreplay sweep` writes for it (settings: grid, resolution, timeline,
    lenient, as its flags)."""
    return run_sweep_task_function()(trace, policy, str(capacity), name=name, **(settings or {}))


def _cached_copy(data: bytes) -> str:
    """The trace's bytes in this machine's cache, written there once (by content)."""
    folder = os.path.join(tempfile.gettempdir(), "memreplay-dask-traces")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, hashlib.sha256(data).hexdigest() + ".mrt")
    if not os.path.exists(path):
        fd, partial = tempfile.mkstemp(dir=folder, suffix=".part")
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(partial, path)  # whole or absent, also with two workers on one machine
    return path


def run_scattered_task(data: bytes, trace: str, name: str, policy: str, capacity: str, settings: dict) -> str:
    """run_task on a trace sent as bytes: replayed from the local cache, reported under its own path (the
    cache's path swapped for it in the line's text, which stays the C++'s otherwise)."""
    local = _cached_copy(data)
    line = run_task(local, name, policy, capacity, settings)
    return line.replace(_json_text(local), _json_text(trace))


def _json_text(text: str) -> str:
    """A string as it appears inside a JSON line (escaped, UTF-8 kept)."""
    return json.dumps(text, ensure_ascii=False)[1:-1]


def _named_traces(traces: TraceList) -> List[Tuple[str, str]]:
    if isinstance(traces, dict):
        return list(traces.items())
    return [(t, t) if isinstance(t, str) else (t[0], t[1]) for t in traces]


def capacity_key(capacity: Union[str, int]) -> str:
    """"none", "fit" or the byte count: a capacity as its task's key (and its line's "capacity") has it,
    sizes read as the CLI reads them (memreplay.parse_bytes)."""
    if capacity in ("none", "fit"):
        return str(capacity)
    from . import _api

    return str(_api.parse_bytes(capacity, "capacity"))


def _done_lines(output: str) -> Dict[Tuple[str, str, str], str]:
    """The lines an output file holds, by task key; a torn last line (a killed writer) is cut off."""
    if not os.path.exists(output):
        return {}
    with open(output, "rb") as f:
        data = f.read()
    whole = data.rfind(b"\n") + 1
    if whole < len(data):
        os.truncate(output, whole)
    lines = [line for line in data[:whole].decode("utf-8", "replace").splitlines() if line.strip()]
    return {task_key(line): line for line in lines}


def _append_line(fd: int, line: str) -> None:
    data = (line + "\n").encode()
    while data:
        data = data[os.write(fd, data):]


def _dask_key(key: Tuple[str, str, str]) -> str:
    return "memreplay-sweep-" + hashlib.sha256("\t".join(key).encode()).hexdigest()[:32]


class _Submitter:
    """Puts one task on the cluster, its trace opened there or scattered to it once."""

    def __init__(self, client, transfer: str, broadcast: bool, settings: dict):
        self.client, self.transfer, self.broadcast, self.settings = client, transfer, broadcast, settings
        self.scattered: Dict[str, object] = {}

    def __call__(self, name: str, path: str, policy: str, capacity: str, key: Tuple[str, str, str]):
        if self.transfer == "shared":
            return self.client.submit(run_task, path, name, policy, capacity, self.settings, key=_dask_key(key),
                                      pure=False)
        if path not in self.scattered:
            with open(path, "rb") as f:
                self.scattered[path] = self.client.scatter(f.read(), hash=True, broadcast=self.broadcast)
        return self.client.submit(run_scattered_task, self.scattered[path], path, name, policy, capacity,
                                  self.settings, key=_dask_key(key), pure=False)


def sweep(client, traces: TraceList, policies: Iterable[str] = ("pytorch",), capacities: Iterable = ("none",),
          *, transfer: str = "shared", broadcast: bool = False, output: Optional[str] = None,
          grid: Optional[int] = None, resolution: Optional[str] = None, timeline: bool = False,
          lenient: bool = False, max_in_flight: Optional[int] = None,
          on_result: Optional[Callable[[str], None]] = None) -> SweepResults:
    """Every trace x policy x capacity on the cluster behind `client`; the results in task order.

    traces: paths (each named by its path), (name, path) pairs or a {name: path} dict. capacities: "none",
    "fit", sizes ("40GiB") or bytes. transfer: "shared" or "scatter" (see the module's help); broadcast:
    scatter every trace to every worker at once rather than to the first that needs it. grid, resolution,
    timeline, lenient: as `memreplay sweep`'s flags. output: a JSON Lines file appended to, tasks it holds
    skipped. At most max_in_flight tasks (default four per worker thread) wait on the cluster at once.
    on_result(line) is called as each new line arrives.
    """
    if transfer not in ("shared", "scatter"):
        raise ValueError(f"transfer={transfer!r}: expected 'shared' or 'scatter'")
    from distributed import as_completed

    settings = {"grid": grid, "resolution": resolution, "timeline": timeline, "lenient": lenient}
    settings = {k: v for k, v in settings.items() if v not in (None, False)}
    policies, capacities = list(policies), [capacity_key(c) for c in capacities]
    lines = _done_lines(output) if output else {}
    fd = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644) if output else None
    window = max_in_flight or 4 * max(1, sum(client.nthreads().values()))
    submit = _Submitter(client, transfer, broadcast, settings)
    order: List[Tuple[str, str, str]] = []
    todo = ((n, p, pol, c) for n, p in _named_traces(traces) for pol in policies for c in capacities)
    pending, in_flight = as_completed(), 0
    try:
        while True:
            for name, path, policy, capacity in todo if in_flight < window else ():
                key = (name, policy, capacity)
                order.append(key)
                if key not in lines:
                    pending.add(submit(name, path, policy, capacity, key))
                    in_flight += 1
                if in_flight >= window:
                    break
            if in_flight == 0:
                break
            line = next(pending).result()
            in_flight -= 1
            key = task_key(line)
            if key in lines:  # the same task twice (resubmitted after its worker died): kept once
                continue
            lines[key] = line
            if fd is not None:
                _append_line(fd, line)
            if on_result:
                on_result(line)
    finally:
        if fd is not None:
            os.close(fd)
    return SweepResults([lines[k] for k in order])
