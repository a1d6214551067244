"""pytest plugin: tests gated on *reserved* GPU memory, predicted by replay, the same on every run.

    @pytest.mark.limit_reserved("8GiB", policy="pytorch")
    def test_training_step():
        ...                                    # on a GPU: its CUDA allocations are recorded

    def test_committed_trace(memreplay_check): # anywhere: a committed trace is replayed
        memreplay_check("tests/data/real/traces/gpt2_train.default.pickle.xz", limit="3GiB")

With the marker, on a machine where torch sees a GPU, the test's CUDA caching allocator is
recorded live (memreplay.torch) and the recording is replayed from an empty pool under the
policy: the limit holds the reserved peak the test itself needs, whatever earlier tests left
cached. Without a GPU the marked test runs unmeasured. A test over its limit fails with the
reserved peak, the limit and the stacks live at the peak (record stacks with
torch.cuda.memory._record_memory_history(stacks="python") to see them).

  --memreplay-fail-on-increase   keep each test's figures in pytest's cache (the lowest of its
                                 passing runs) and fail a test whose reserved peak or device calls
                                 grew past them beyond the tolerances (--memreplay-tolerance
                                 METRIC=VALUE, as `memreplay check`'s; defaults are check's:
                                 reserved_peak 1%, device_calls 10%)
  --memreplay-traces DIR         keep each recorded trace as DIR/<test id>.mrt
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from typing import Any, Callable, Dict, List, Optional

import pytest

_CACHE_PREFIX = "memreplay"
_TOP_STACKS = 5


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("memreplay", "reserved GPU memory, predicted by replay")
    group.addoption("--memreplay-fail-on-increase", action="store_true", default=False,
                    help="fail a test whose replayed reserved peak or device calls grew beyond the tolerances "
                         "since the figures kept in pytest's cache")
    group.addoption("--memreplay-tolerance", action="append", default=[], metavar="METRIC=VALUE",
                    help="tolerance of --memreplay-fail-on-increase for reserved_peak or device_calls, e.g. "
                         "reserved_peak=2%% (repeatable)")
    group.addoption("--memreplay-traces", metavar="DIR", default=None,
                    help="keep each test's trace (.mrt) in DIR")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "limit_reserved(limit, policy='pytorch', capacity=None): fail when the test's CUDA allocations, "
        "recorded live and replayed from an empty pool under the policy, reserve more than limit (e.g. '8GiB')")


# --- what the gate computes ---


class _Gate:
    """The checks of one test: its limits and, with --memreplay-fail-on-increase, its figures since
    the last run (kept in config.cache under memreplay/<test id>/<trace>/<policy>)."""

    def __init__(self, config: pytest.Config, nodeid: str):
        self.config = config
        self.nodeid = nodeid
        self.failures: List[str] = []

    def traces_dir(self) -> Optional[str]:
        return self.config.getoption("--memreplay-traces")

    def check(self, trace: Any, limit: Any, policy: str, capacity: Any, label: str, from_empty_pool: bool) -> Any:
        import memreplay

        result = memreplay.replay(trace, policy=policy, capacity=capacity, from_empty_pool=from_empty_pool)
        if limit is not None or result.oom:
            limit_bytes = None if limit is None else memreplay.parse_bytes(limit, "limit")
            if result.oom or result["reserved_peak"] > limit_bytes:
                self.failures.append(_over_limit(trace, result, limit_bytes, policy, capacity, from_empty_pool))
        if self.config.getoption("--memreplay-fail-on-increase"):
            self._hold_against_cache(result, label, policy)
        return result

    def _hold_against_cache(self, result: Any, label: str, policy: str) -> None:
        tolerances = _tolerances(self.config)
        key = f"{_CACHE_PREFIX}/{self.nodeid}/{label}/{policy}"
        now = {"reserved_peak": result["reserved_peak"],
               "device_calls": result["device_alloc_calls"] + result["device_free_calls"]}
        before = self.config.cache.get(key, None)
        grew = []
        if before:
            for metric, value in now.items():
                if metric in before and value > before[metric] * (1 + tolerances[metric]):
                    grew.append(f"{metric} {_show(metric, value)} > {_show(metric, before[metric])} "
                                f"(+{100 * tolerances[metric]:g}% allowed)")
        if grew:
            self.failures.append(f"{label} under {policy}: grew past the figures kept from earlier runs: " +
                                 "; ".join(grew))
            return  # the figures to beat stay those kept
        # A ratchet: the lowest figures seen are the ones later runs are held to.
        kept = {m: min(v, before.get(m, v)) if before else v for m, v in now.items()}
        self.config.cache.set(key, kept)


def _show(metric: str, value: Any) -> str:
    from ._format import format_bytes

    return format_bytes(value) if metric == "reserved_peak" else str(value)


def _tolerances(config: pytest.Config) -> Dict[str, float]:
    from . import _core

    tolerances = {m: t for m, t in _core.default_tolerances().items() if m in ("reserved_peak", "device_calls")}
    given = dict(_core.parse_tolerance(spec) for spec in config.getoption("--memreplay-tolerance"))
    for metric, value in given.items():
        if metric not in tolerances:
            raise pytest.UsageError(f"--memreplay-tolerance {metric}: only reserved_peak and device_calls are kept")
        tolerances[metric] = value
    return tolerances


def _over_limit(trace: Any, result: Any, limit: Optional[int], policy: str, capacity: Any,
                from_empty_pool: bool) -> str:
    from . import _core
    from ._api import _options, load
    from ._format import format_bytes

    t = load(trace)
    lines = []
    if result.oom:
        lines.append(f"{t.name}: out of memory under {policy} at capacity {format_bytes(result['capacity'])} "
                     f"(replay event {result['oom_at_event']}, {format_bytes(result['oom_request_bytes'])} asked)")
    else:
        replayed = "replayed from an empty pool" if from_empty_pool else "replayed"
        lines.append(f"{t.name}: reserved peak {format_bytes(result['reserved_peak'])} > limit "
                     f"{format_bytes(limit)} under {policy} ({replayed}; "
                     f"{format_bytes(result['reserved_peak'] - limit)} over)")
    options = _options(t, policy, capacity)
    options.from_empty_pool = from_empty_pool
    peak = _core.peak_state(options, _TOP_STACKS)
    if peak["top_stacks"]:
        lines.append(f"stacks live at the peak (requested bytes; {format_bytes(peak['requested'])} requested, "
                     f"{format_bytes(peak['allocated'])} allocated then):")
        for stack in peak["top_stacks"]:
            frames = stack["frames"] or ["(no stack recorded: torch.cuda.memory._record_memory_history(stacks=...))"]
            lines.append(f"  {format_bytes(stack['bytes']):>10} in {stack['blocks']} blocks")
            lines.extend(f"      {frame}" for frame in _frames_to_show(frames))
    return "\n".join(lines)


def _is_library_frame(frame: str) -> bool:
    return frame.startswith("<") or any(part in frame for part in ("/site-packages/", "/dist-packages/",
                                                                    "/lib/python3"))


def _frames_to_show(frames: List[str], most: int = 8) -> List[str]:
    """A stack's innermost two frames, then the code's own (outside installed packages and the
    standard library) up to `most` frames: a model's allocation is torch's innermost, but what the
    user changes is their own line, often dozens of torch frames further out. '...' where some are
    left out."""
    if len(frames) <= most:
        return frames
    own = [i for i, frame in enumerate(frames) if i >= 2 and not _is_library_frame(frame)]
    keep = sorted({0, 1, *own[:most - 2]}) if own else list(range(most))
    shown, last = [], -1
    for i in keep:
        if i != last + 1:
            shown.append("...")
        shown.append(frames[i])
        last = i
    return shown + ["..."] if last < len(frames) - 1 else shown


def _test_file_name(nodeid: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid).strip("_")[:200] or "test"


# --- the fixture: committed traces, no GPU needed ---


@pytest.fixture
def memreplay_check(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """memreplay_check(trace, limit=None, policy="pytorch", capacity=None) replays a trace (a .mrt,
    a snapshot file or dict, a memreplay.Trace) from an empty device and fails the test when its
    reserved peak exceeds `limit` (bytes or "3GiB"), when it runs out of memory under `capacity`, or,
    with --memreplay-fail-on-increase, when its figures grew since the last run. Returns the
    memreplay.ReplayResult."""
    gate = _Gate(request.config, request.node.nodeid)

    def check(trace: Any, limit: Any = None, policy: str = "pytorch", capacity: Any = None) -> Any:
        import memreplay

        loaded = memreplay.load(trace)
        keep = gate.traces_dir()
        if keep:
            os.makedirs(keep, exist_ok=True)
            loaded.save(os.path.join(keep, f"{_test_file_name(request.node.nodeid)}.{loaded.name}.mrt"))
        result = gate.check(loaded, limit, policy, capacity, loaded.name, from_empty_pool=False)
        if gate.failures:
            message, gate.failures[:] = "\n".join(gate.failures), []
            pytest.fail(message, pytrace=False)
        return result

    return check


# --- the marker: live recording on a GPU ---


# What pytest_pyfunc_call recorded, for pytest_runtest_makereport: (trace, written, folder).
_RECORDED = pytest.StashKey[tuple]()


def _limit_reserved(item: pytest.Item) -> Optional[pytest.Mark]:
    return item.get_closest_marker("limit_reserved")


def _torch_gpu() -> Any:
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


@pytest.hookimpl(hookwrapper=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function):  # type: ignore[no-untyped-def]
    marker = _limit_reserved(pyfuncitem)
    torch = _torch_gpu() if marker is not None else None
    if torch is None:
        yield
        return
    import memreplay.torch as recorder

    folder = pyfuncitem.config.getoption("--memreplay-traces") or tempfile.mkdtemp(prefix="memreplay-test-")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, _test_file_name(pyfuncitem.nodeid) + ".mrt")
    torch.cuda.synchronize()
    recording = recorder.start(path)
    started = recording.active
    try:
        yield
    finally:
        torch.cuda.synchronize()
        recording.stop()
    pyfuncitem.stash[_RECORDED] = (path, started and os.path.exists(path), folder)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):  # type: ignore[no-untyped-def]
    outcome = yield
    report = outcome.get_result()
    recorded = item.stash.get(_RECORDED, None)
    if call.when != "call" or recorded is None:
        return
    path, written, folder = recorded
    try:
        if not report.failed:
            _gate_recorded_test(item, report, path, written)
    finally:
        if not item.config.getoption("--memreplay-traces"):
            shutil.rmtree(folder, ignore_errors=True)


def _gate_recorded_test(item: pytest.Item, report: pytest.TestReport, path: str, written: bool) -> None:
    from ._format import format_bytes

    if not written:
        report.sections.append(("memreplay", f"{path}: nothing was recorded (see stderr); the limit is not checked"))
        return
    marker = _limit_reserved(item)
    args, kwargs = marker.args, dict(marker.kwargs)
    limit = args[0] if args else kwargs.get("limit")
    policy = kwargs.get("policy", "pytorch")
    gate = _Gate(item.config, item.nodeid)
    result = gate.check(path, limit, policy, kwargs.get("capacity"), "live", from_empty_pool=True)
    report.sections.append(("memreplay", f"reserved peak {format_bytes(result['reserved_peak'])} "
                                         f"({result['reserved_peak']} bytes) under {policy}, replayed from an "
                                         f"empty pool; limit {limit}; num_device_alloc {result.num_device_alloc}"))
    if gate.failures:
        report.outcome = "failed"
        report.longrepr = "\n".join(gate.failures)
