"""memreplay's functions: the arguments as the CLI takes them (policy specs, capacities such as
"24GB"), the work done by the same C++ functions the CLI calls (memreplay._core, with the GIL
released), the results as the CLI's --json documents (memreplay._results)."""

from __future__ import annotations

import contextlib
import os
import warnings
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Union

from . import _core
from ._core import InputError
from ._results import Advice, BoundResult, CheckResult, Comparison, FitResult, ReplayResult, Trace

TraceLike = Union[Trace, str, "os.PathLike[str]", Mapping[str, Any]]
Bytes = Union[int, str]

_COMPRESSION_SUFFIXES = (".xz", ".gz", ".zst", ".zstd", ".bz2")
_CONTENT_SUFFIXES = (".pickle", ".pkl", ".pt", ".mrt", ".csv", ".log", ".txt")


# As the CLI does before it parses its command line.
_core.load_environment_plugins()


class MemreplayWarning(UserWarning):
    """What the CLI prints as `memreplay: warning: ...`: an option that does nothing, an incomplete
    trace, a byte count without a unit."""


def _warn(messages: Sequence[str]) -> None:
    for message in messages:
        warnings.warn(message, MemreplayWarning, stacklevel=3)


@contextlib.contextmanager
def _naming(path: str) -> Iterator[None]:
    """InputErrors about `path` carry it as their file where the C++ error did not say."""
    try:
        yield
    except InputError as e:
        if getattr(e, "file", None) is None and str(e).startswith(path + ":"):
            e.file = path
        raise


def _trace_name(source: str) -> str:
    """'runs/gpt2_train.default.pickle.xz' -> 'gpt2_train.default' (what check's baselines key by)."""
    name = os.path.basename(source)
    for suffixes in (_COMPRESSION_SUFFIXES, _CONTENT_SUFFIXES):
        for suffix in suffixes:
            if name.endswith(suffix) and len(name) > len(suffix):
                name = name[: -len(suffix)]
                break
    return name or "trace"


def load(src: TraceLike, *, name: Optional[str] = None, capacity: Optional[Bytes] = None) -> Trace:
    """A trace to replay, from
      - a .mrt file (memreplay import, a recorder),
      - a PyTorch snapshot file (torch.cuda.memory._dump_snapshot(), plain or .gz/.xz/.zst) or an RMM
        log, imported as `memreplay import` would,
      - the dict torch.cuda.memory._snapshot() returns, read in memory (never pickled): the trace is
        byte for byte the one its pickle imports to,
      - a Trace (returned as it is).
    `name` names an imported trace (check's baselines key traces by name; default: the file's name
    without its suffixes, "snapshot" for a dict) and, for a dict, is its source_file in the header.
    `capacity` (bytes, "40GiB"): the per-process cap the recorded run had, for an import, as
    `memreplay import --capacity`: a burst of segment frees the snapshot leaves open between a
    release-and-retry and an empty_cache() is settled by replaying up to it under the cap, and the
    trace records the cap (a replay without a capacity uses it). replay(), compare(), fit(), fits(),
    advise() and report() pass theirs here.
    Raises FileNotFoundError for a missing file and InputError for damaged input (with the file,
    byte offset or event index)."""
    if isinstance(src, Trace):
        return src
    cap = None if capacity is None else parse_bytes(capacity)
    if isinstance(src, Mapping):
        source = name or "snapshot"
        snapshot = src if type(src) is dict else dict(src)
        return Trace(_core.import_dict(snapshot, source, _trace_name(source), cap), _trace_name(source))
    if isinstance(src, (str, os.PathLike)):
        path = os.fspath(src)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"{path}: no such file")
        with _naming(path):
            if _core.is_trace_file(path):
                return Trace(_core.open_trace(path), name or _trace_name(path))
            trace_name = _trace_name(name or path)
            return Trace(_core.import_file(path, trace_name, cap), trace_name)
    raise TypeError(f"memreplay.load: expected a path, a snapshot dict or a Trace, not {type(src).__name__}")


def parse_bytes(value: Bytes, what: str = "capacity") -> int:
    """A byte count as the CLI reads one: an int is bytes; a str has a unit, B, KiB, MiB, GiB, TiB
    (powers of 1024) or KB, MB, GB, TB (powers of 1000), e.g. "24GB", "7.5GiB" (a str without one is
    bytes, with a MemreplayWarning). Raises ValueError for anything else."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise TypeError(f"{what}: expected bytes as an int or a str such as '24GB', not {type(value).__name__}")
    if isinstance(value, int):
        if value <= 0:
            raise ValueError(f"{what}: {value}: expected a positive number of bytes")
        return value
    try:
        count, warning = _core.parse_bytes(value, what)
    except InputError as e:
        raise ValueError(str(e)) from None
    if warning:
        _warn([warning])
    return count


def _positive(value: float, what: str) -> None:
    """As the CLI's --max-call-ratio takes it: a number above 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"{what} {value!r}: expected a number above 0")


def load_plugin(path: "str | os.PathLike[str]") -> str:
    """Loads a policy plugin (a .so built against memreplay_policy_plugin.h's C ABI) and returns the
    name its policy is registered under. A policy spec may also name the plugin by path
    ("./my_policy.so:option:value"). MEMREPLAY_PLUGINS=A.so:B.so is loaded when memreplay is imported."""
    return _core.load_plugin(os.fspath(path))


def _policy(spec: str) -> str:
    """A policy spec as the CLI takes it; one whose name is a plugin's path loads the plugin."""
    if not isinstance(spec, str) or not spec:
        raise ValueError(f"policy {spec!r}: expected a spec such as 'pytorch:expandable_segments:True'")
    name, colon, options = spec.partition(":")
    if name.endswith(".so") or os.sep in name:
        return load_plugin(name) + colon + options
    _core.check_policy_spec(spec)
    return spec


def _options(trace: Trace, policy: str = "pytorch", capacity: Optional[Bytes] = None, device: str = "sim",
             trace_device: int = 0, lenient: bool = False, keep_going: bool = False,
             time_operations: bool = False, from_empty_pool: bool = False) -> Any:
    options = _core.ReplayOptions()
    options.trace_path = trace.path
    options.policy_spec = _policy(policy)
    options.device_spec = device
    options.capacity = None if capacity is None else parse_bytes(capacity)
    options.trace_device = trace_device
    options.lenient = lenient
    options.continue_after_oom = keep_going
    options.time_operations = time_operations
    options.from_empty_pool = from_empty_pool
    return options


def _recorded_capacity(options: Any) -> List[str]:
    """Without a capacity, the cap the trace recorded (memreplay.torch, `import --capacity`) goes into
    `options`, as the CLI's replay, compare, advise and report do; the line that says so, if any."""
    note = _core.use_recorded_capacity(options)
    return [note] if note else []


def _whole_run(t: "Trace", options: Any, allow_incomplete: bool, refusal: str, call: Any) -> Dict[str, Any]:
    """`call()` (advise, report) on the whole of trace `t`: refused with `refusal` where the trace is
    incomplete, unless allow_incomplete; the recorded cap applied where no capacity was given; its
    warnings and that note given as Python warnings. Returns what `call` returned."""
    with _naming(t.path):
        _core.refuse_incomplete_trace(t.path, allow_incomplete, refusal)
        notes = _recorded_capacity(options)
        out = call()
    _warn(notes + out["warnings"])
    return out


def policies() -> List[Dict[str, Optional[str]]]:
    """Every registered policy (plugins loaded so far included), as `memreplay policies --json` lists
    them: name, description, options, reserves_up_front and models_torch_version (None where none)."""
    return _core.policies()


def replay(trace: TraceLike, policy: str = "pytorch", capacity: Optional[Bytes] = None, device: str = "sim", *,
           trace_device: int = 0, lenient: bool = False, keep_going: bool = False, time_operations: bool = False,
           from_empty_pool: bool = False) -> ReplayResult:
    """Replays the trace from an empty device against `policy` (a spec as on the CLI:
    "pytorch:expandable_segments:True", "bfc", a plugin's path) under `capacity` (bytes, "24GB"; a
    device malloc over it fails, as torch.cuda.set_per_process_memory_fraction's cap) on `device`
    ("sim", or "cuda:N" for a real GPU). Returns every field of `memreplay replay --json`, with
    torch.cuda.memory_stats()'s names where it has one (result["reserved_bytes.all.peak"],
    result.num_device_alloc, result.num_alloc_retries, result.num_ooms). An OOM under the capacity
    is a result (result.oom, result.oom_at_event), not an error; keep_going counts every OOM.
    from_empty_pool: of a trace that starts mid-run (recording began with memory allocated), only the
    run's own allocations are replayed, from an empty pool: what was allocated or cached before is
    left out, so the numbers do not depend on it."""
    t = load(trace, capacity=capacity)
    options = _options(t, policy, capacity, device, trace_device, lenient, keep_going, time_operations,
                       from_empty_pool)
    with _naming(t.path):
        notes = _recorded_capacity(options)
        out = _core.replay(options)
    _warn(notes + out["warnings"])
    return ReplayResult(out["result"])


def compare(trace: TraceLike, policies: Optional[Sequence[str]] = None, capacity: Optional[Bytes] = None,
            device: str = "sim", *, trace_device: int = 0, lenient: bool = False, keep_going: bool = False,
            time_operations: bool = False, max_call_ratio: float = _core.DEFAULT_MAX_CALL_RATIO) -> Comparison:
    """The trace replayed under each of `policies` (None or ["all"]: every registered policy), one
    replay each, as `memreplay compare`. Returns a Comparison: a sequence of ReplayResult, .best (the
    star: the lowest reserved peak without OOM among the policies making at most `max_call_ratio`
    times the device calls of the current setting, the first policy, pytorch for `all`),
    .to_pandas(), the --json document as .to_dict(), a table in Jupyter."""
    _positive(max_call_ratio, "max_call_ratio")
    if isinstance(policies, str):
        raise TypeError("memreplay.compare: policies is a list of specs, e.g. ['pytorch', 'bfc']")
    t = load(trace, capacity=capacity)
    specs = [spec if spec == "all" else _policy(spec) for spec in (policies or [])]
    options = _options(t, "pytorch", capacity, device, trace_device, lenient, keep_going, time_operations)
    with _naming(t.path):
        notes = _recorded_capacity(options)
        out = _core.compare(options, specs, float(max_call_ratio))
    _warn(notes + out["warnings"])
    return Comparison(out["result"])


def fit(trace: TraceLike, policy: str = "pytorch", capacity: Optional[Bytes] = None, *, resolution: Bytes = "1MiB",
        grid: int = _core.DEFAULT_FIT_GRID, device: str = "sim", trace_device: int = 0,
        lenient: bool = False) -> FitResult:
    """The smallest per-process capacity the trace replays in without running out of memory
    (result.min_fit_bytes; fitting need not be monotonic: fits_above_bytes is where every tested
    capacity fits), found as `memreplay fit` finds it: `grid` capacities between the requested and
    the reserved peak, then bisections down to `resolution`. With `capacity`: whether it fits there
    (result.fits) and, if not, the first allocation that fails, with its stack (result.oom)."""
    t = load(trace, capacity=capacity)
    if not 2 <= grid <= 4096:
        raise ValueError(f"grid {grid}: expected 2 to 4096 capacities")
    options = _options(t, policy, capacity, device, trace_device, lenient)
    with _naming(t.path):
        out = _core.fit(options, parse_bytes(resolution, "resolution"), grid)
    _warn(out["warnings"])
    return FitResult(out["result"])


def fits(trace: TraceLike, capacity: Bytes, policy: str = "pytorch", *, device: str = "sim",
         trace_device: int = 0, lenient: bool = False) -> bool:
    """Whether the trace replays under `policy` without running out of memory at `capacity` (bytes,
    "24GB"): one capped replay that stops at the first OOM."""
    t = load(trace, capacity=capacity)
    with _naming(t.path):
        return _core.fits(_options(t, policy, capacity, device, trace_device, lenient))


def bound(trace: TraceLike, *, trace_device: int = 0) -> BoundResult:
    """The floor for the trace (`memreplay bound`): its requested peak, and the footprint of the best
    static placement found with every lifetime known, on requested and on 512-byte-rounded sizes."""
    t = load(trace)
    with _naming(t.path):
        return BoundResult(_core.bound(t.path, trace_device))


def advise(trace: TraceLike, policy: str = "pytorch", capacity: Optional[Bytes] = None, *, fit: bool = True,
           allow_incomplete: bool = False, device: str = "sim", trace_device: int = 0,
           lenient: bool = False, max_call_ratio: float = _core.DEFAULT_MAX_CALL_RATIO) -> Advice:
    """What to change, ranked, with the evidence of replays (`memreplay advise`): each AdviceItem has
    the setting to paste (item.setting, e.g. 'PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True') and
    its numbers. `policy` is the setting the job runs with now; fit=False skips the capacity search;
    no setting making more than `max_call_ratio` times the current one's device calls is advised."""
    _positive(max_call_ratio, "max_call_ratio")
    t = load(trace, capacity=capacity)
    options = _options(t, policy, capacity, device, trace_device, lenient)
    out = _whole_run(t, options, allow_incomplete,
                     "advice from part of a run would mislead (allow_incomplete=True to advise anyway)",
                     lambda: _core.advise(options, fit, float(max_call_ratio)))
    return Advice(out["result"], out["text"])


def check(traces: Union[TraceLike, Sequence[TraceLike], Mapping[str, TraceLike]], policies: Union[str, Sequence[str]],
          *, baseline: "Optional[str | os.PathLike[str]]" = None, update_baseline: bool = False, accept: bool = False,
          allow_new: bool = False, allow_shrink: bool = False, allow_empty: bool = False,
          tolerances: Optional[Mapping[str, Union[float, str]]] = None, max_reserved: Optional[Bytes] = None,
          max_overhead: Optional[float] = None, capacity: Optional[Bytes] = None, fit: bool = False,
          allow_incomplete: bool = False, device: str = "sim", trace_device: int = 0, lenient: bool = False,
          junit: "Optional[str | os.PathLike[str]]" = None, markdown: "Optional[str | os.PathLike[str]]" = None,
          json: "Optional[str | os.PathLike[str]]" = None) -> CheckResult:
    """The CI gate (`memreplay check`): every trace × policy replayed and held against the baseline
    file (within `tolerances`, e.g. {"reserved_peak": "2%"}) and the plain limits (max_reserved,
    max_overhead = reserved ÷ requested peak, capacity: an OOM under it fails). `traces`: one trace,
    a list (each keyed in the baseline by its name), or {name: trace}. update_baseline writes the
    baseline from these replays (refused for a change beyond a tolerance unless accept); allow_new,
    allow_shrink, allow_empty pass a case the baseline lacks, a requested peak or event count that
    fell, a trace that requested nothing. Returns a CheckResult, true when it passed, its
    regressions one line each; junit, markdown and json are written as the CLI writes them."""
    if isinstance(traces, Mapping) and not _is_snapshot(traces):
        named = [(name, load(t, capacity=capacity)) for name, t in traces.items()]
    else:
        items = [traces] if isinstance(traces, (str, os.PathLike, Mapping, Trace)) else list(traces)
        named = [(None, load(t, capacity=capacity)) for t in items]
    request = _core.CheckRequest()
    inputs = []
    for name, t in named:
        entry = _core.TraceInput()
        entry.path = t.path
        entry.name = name or t.name
        inputs.append(entry)
    request.traces = inputs
    request.policies = [p if p == "all" else _policy(p) for p in ([policies] if isinstance(policies, str) else policies)]
    request.baseline = os.fspath(baseline) if baseline is not None else ""
    request.update_baseline = update_baseline
    request.tolerances = dict(_core.parse_tolerance(f"{k}={v}") for k, v in (tolerances or {}).items())
    request.max_reserved = None if max_reserved is None else parse_bytes(max_reserved, "max_reserved")
    request.max_overhead = max_overhead
    request.capacity = None if capacity is None else parse_bytes(capacity)
    allow = _core.Allowances()
    allow.allow_new, allow.allow_shrink, allow.allow_empty, allow.accept = allow_new, allow_shrink, allow_empty, accept
    request.allow = allow
    outputs = _core.CheckOutputs()
    outputs.junit, outputs.markdown, outputs.json = (os.fspath(p) if p is not None else "" for p in (junit, markdown, json))
    request.outputs = outputs
    request.fit = fit
    request.allow_incomplete = allow_incomplete
    request.device = device
    request.trace_device = trace_device
    request.lenient = lenient
    out = _core.check(request)
    _warn(out["warnings"])
    return CheckResult(out["result"], out["junit"], out["markdown"], out["failures"], out["passed"], out["regressions"])


def _is_snapshot(mapping: Mapping[str, Any]) -> bool:
    return "device_traces" in mapping or "segments" in mapping


def _write(path: "str | os.PathLike[str]", data: bytes) -> str:
    """Writes as the CLI writes every file (base/output_file.h): whole or not at all, through a
    unique temporary beside the target; a symlink followed, a device or FIFO written as such."""
    path = os.fspath(path)
    _core.write_output_file(path, data)
    return path


def report(trace: TraceLike, path: "str | os.PathLike[str]", policies: Optional[Sequence[str]] = None, *,
           capacity: Optional[Bytes] = None, allow_incomplete: bool = False, device: str = "sim",
           trace_device: int = 0, lenient: bool = False,
           max_call_ratio: float = _core.DEFAULT_MAX_CALL_RATIO) -> str:
    """Writes the self-contained HTML report of `memreplay report` to `path` (the advice, the memory
    timeline per policy, the segments at each reserved peak and the stacks live then); the first of
    `policies` is the current setting (default: pytorch and pytorch:expandable_segments:True), whose
    device calls the star's `max_call_ratio` multiplies. Returns the path."""
    _positive(max_call_ratio, "max_call_ratio")
    t = load(trace, capacity=capacity)
    options = _options(t, "pytorch", capacity, device, trace_device, lenient)
    specs = [_policy(p) for p in (policies or [])]
    out = _whole_run(t, options, allow_incomplete, "no report written (allow_incomplete=True to draw what it holds)",
                     lambda: _core.report(options, specs, float(max_call_ratio)))
    return _write(path, out["html"].encode())


def export(trace: TraceLike, path: "str | os.PathLike[str]", to: str = "memory-viz",
           policies: Optional[Sequence[str]] = None, *, trace_device: int = 0, allow_incomplete: bool = False) -> str:
    """Writes the trace for the viewers people use (`memreplay export`): to="memory-viz", a PyTorch
    snapshot pickle for pytorch.org/memory_viz (a trace without segments gets those of a replay under
    the first of `policies`, default pytorch); to="perfetto", Chrome trace-event JSON with counter
    tracks per policy and every allocation as a slice. Returns the path."""
    t = load(trace)
    specs = [_policy(p) for p in (policies or [])]
    with _naming(t.path):
        _core.refuse_incomplete_trace(t.path, allow_incomplete, "allow_incomplete=True to export what it holds")
        if to == "memory-viz":
            data = _core.export_memory_viz(t.path, trace_device, specs[0] if specs else "pytorch")["pickle"]
        elif to == "perfetto":
            data = _core.export_perfetto(t.path, trace_device, specs)
        else:
            raise ValueError(f"to={to!r}: expected 'memory-viz' or 'perfetto'")
    return _write(path, data)
