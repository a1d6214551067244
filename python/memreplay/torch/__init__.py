"""Record PyTorch's CUDA caching allocator live into a memreplay trace (.mrt), or run a memreplay
policy as its allocator (use_policy, pool, live_stats: _live.py, docs/deploying.md).

    import memreplay.torch
    with memreplay.torch.record("run.mrt"):
        train()

    python -m memreplay.torch record -o run.mrt -- train.py ARGS

Every trace entry of the allocator goes into the trace as it happens: alloc, free_requested,
free_completed, segment_alloc/free/map/unmap, oom, snapshot, on every device, with its stream,
time and requested size, whether or not torch.cuda.memory._record_memory_history is on (the
allocator's trace tracker sees them all). Turn history on with stacks, e.g.
torch.cuda.memory._record_memory_history(stacks="python"), and each entry's stack is recorded too.
torch.cuda.empty_cache() calls are recorded as empty_cache events, so a replay does them too. The
per-process cap (torch.cuda.set_per_process_memory_fraction, read with torch 2.8's
get_per_process_memory_fraction) goes into the trace's header, so a replay runs under it unless
told another; set it before recording starts (a change while recording is only reported).

The trace is written while the job runs, chunk by chunk, at least every flush_interval seconds:
a job killed even with SIGKILL leaves a trace that reads back whole but for its last moments.

Nothing here stops the job: when recording cannot start (no CUDA, a torch without the tracker API,
an unwritable path, an allocator backend without trace tracking) a message goes to stderr and the
job runs unrecorded. If CUDA memory was allocated before recording starts, the trace begins with
the allocator's state at that moment (from torch.cuda.memory_snapshot()), flagged as preexisting.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import time

from ._live import PolicyUnavailable, finish_trace, live_stats, pool, use_policy
from ._native import FLAGS, KINDS, FormatMismatch, RecorderUnavailable, check_format, extension, find_record_library

__all__ = ["record", "start", "Recording", "RecorderUnavailable", "FormatMismatch", "use_policy", "pool", "live_stats",
           "finish_trace", "PolicyUnavailable"]

_SEGMENT_ALLOC, _SEGMENT_MAP, _ALLOC, _FREE_REQUESTED, _EMPTY_CACHE = (
    KINDS[k] for k in ("segment_alloc", "segment_map", "alloc", "free_requested", "empty_cache"))
_PREEXISTING = FLAGS["preexisting"]

# A library of another memreplay version is refused now, not halfway through a job. Without a
# library yet, the check waits until start() finds one.
try:
    _library = find_record_library()
except RecorderUnavailable:
    _library = None
if _library is not None:
    check_format(_library)

_lock = threading.Lock()
_active: "Recording | None" = None


def _say(message: str) -> None:
    print(f"memreplay: {message}", file=sys.stderr, flush=True)


def _settings_text(value, depth: int = 0) -> str:
    """A snapshot setting as text, the way the snapshot importer writes it."""
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (list, tuple, set)):
        return "[" + ",".join(_settings_text(v, depth + 1) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{_settings_text(k)}:{_settings_text(v, depth + 1)}" for k, v in value.items()) + "}"
    return str(value)


def _flatten_settings(value, prefix: str = "", depth: int = 0, out=None) -> dict:
    """allocator_settings flattened: {"a": {"1": 0}} -> {"a.1": "0"}."""
    out = {} if out is None else out
    if isinstance(value, dict) and depth < 8:
        for k, v in value.items():
            _flatten_settings(v, f"{prefix}.{k}" if prefix else str(k), depth + 1, out)
    else:
        out[prefix] = _settings_text(value)
    return out


def _memory_fraction(torch, index: int):
    """The caching allocator's per-process fraction on device `index` (1.0 without a cap), or None
    where torch cannot say (torch.cuda.get_per_process_memory_fraction is torch 2.8 or later)."""
    get = getattr(torch.cuda.memory, "get_per_process_memory_fraction", None)
    if get is None:
        return None
    try:
        return float(get(index))
    except Exception:  # another allocator backend, a device that is gone
        return None


def _cap_bytes(torch, index: int, total_memory: int):
    """The per-process cap on device `index` in bytes, the allocator's allowed_memory_maximum: torch
    reports it as a fraction of the total memory (set_per_process_memory_fraction), computed from
    those bytes, so the nearest integer is exact. None without a cap, or where torch cannot say."""
    fraction = _memory_fraction(torch, index)
    if fraction is None or not 0.0 <= fraction < 1.0:
        return None
    return round(fraction * total_memory)


def _header(torch, starts_mid_run: bool, snapshot: dict) -> list:
    pairs = [("source", "pytorch-live"), ("command_line", " ".join(sys.argv))]
    if starts_mid_run:
        pairs.append(("starts_mid_run", "1"))
    for index in range(torch.cuda.device_count()):
        props = torch.cuda.get_device_properties(index)
        pairs.append(("device", f"{index};{props.total_memory};{props.name}"))
        cap = _cap_bytes(torch, index, props.total_memory)
        if cap is not None:
            pairs.append(("device_cap", f"{index};{cap}"))
    for key, value in _flatten_settings(snapshot.get("allocator_settings") or {}).items():
        pairs.append((f"setting:{key}", value))
    # The release, under the header key every trace command compares with the release a policy
    # models (setting torch_version: policies/torch_version.h, docs/pytorch-versions.md), and the
    # commit it was built from, which names a nightly or a source build exactly.
    pairs.append(("setting:torch_version", str(torch.__version__)))
    git_version = getattr(getattr(torch, "version", None), "git_version", None)
    if git_version:
        pairs.append(("setting:torch_git_version", str(git_version)))
    return pairs


def _replay_existing_state(native, handle, segments) -> tuple:
    """The allocator's state at start as preexisting events, as the snapshot importer does."""
    blocks = 0
    for segment in segments:
        device, stream = segment["device"], segment["stream"]
        kind = _SEGMENT_MAP if segment.get("is_expandable") else _SEGMENT_ALLOC
        native.record(handle, kind, device, stream, segment["address"], segment["total_size"], _PREEXISTING, 0)
        address = segment["address"]
        for block in segment["blocks"]:
            state = block["state"]
            if state in ("active_allocated", "active_pending_free"):
                native.record(handle, _ALLOC, device, stream, address, block["requested_size"], _PREEXISTING,
                              block["size"])
                blocks += 1
                if state == "active_pending_free":
                    native.record(handle, _FREE_REQUESTED, device, stream, address, block["requested_size"],
                                  _PREEXISTING, 0)
            address += block["size"]
    return len(segments), blocks


class Recording:
    """A live recording; stop() (or leaving the `with` block, or the interpreter's exit) ends it."""

    def __init__(self, path: str, native=None, handle: int = 0):
        self.path = path
        self._native = native
        self._handle = handle
        self._final_stats = None
        self._started = time.time()

    @property
    def active(self) -> bool:
        return self._handle != 0

    def stats(self) -> dict:
        """{"recorded", "written", "dropped", "failed"} so far (or at stop)."""
        if self._final_stats is not None:
            return dict(self._final_stats)
        if not self.active:
            return {"recorded": 0, "written": 0, "dropped": 0, "failed": False}
        return self._native.stats(self._handle)

    def flush(self) -> bool:
        """Everything recorded so far is in the file when this returns True."""
        return self.active and self._native.flush(self._handle)

    def annotate(self, **metadata) -> None:
        """A marker in the trace, e.g. recording.annotate(phase="eval", step="100")."""
        if self.active:
            import torch

            self._native.annotate(self._handle, torch.cuda.current_device(),
                                  [(k, str(v)) for k, v in metadata.items()])

    def stop(self) -> dict:
        """Finishes the trace (footer included) and returns the final stats."""
        global _active
        with _lock:
            if not self.active:
                return self.stats()
            self._native.set_current(0)
            handle, self._handle = self._handle, 0
            self._final_stats = self._native.close(handle)
            if _active is self:
                _active = None
        stats = self._final_stats
        if stats["dropped"]:
            _say(f"{self.path}: {stats['dropped']} events were dropped (buffers full); the trace is incomplete")
        return dict(stats)

    def __enter__(self) -> "Recording":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def _record_empty_cache(original):
    def empty_cache(*args, **kwargs):
        recording = _active
        if recording is not None and recording.active:
            import torch

            recording._native.record(recording._handle, _EMPTY_CACHE, torch.cuda.current_device(), 0, 0, 0, 0, 0)
        return original(*args, **kwargs)

    empty_cache.__wrapped__ = original
    empty_cache.__doc__ = original.__doc__
    return empty_cache


def _warn_cap_change(original):
    """set_per_process_memory_fraction during a recording: the trace's header holds the cap at the
    start only, so say what to give a replay instead."""
    def set_per_process_memory_fraction(fraction, device=None):
        result = original(fraction, device)
        recording = _active
        if recording is not None and recording.active:
            try:
                import torch

                index = device if isinstance(device, int) else None if device is None else torch.device(device).index
                index = torch.cuda.current_device() if index is None else index
                cap = _cap_bytes(torch, index, torch.cuda.get_device_properties(index).total_memory)
                given = f"--capacity {cap}B" if cap is not None else "no --capacity"
                _say(f"set_per_process_memory_fraction({fraction}) while recording to {recording.path}: its "
                     f"header holds the cap the recording started with; replay device {index} with {given} (set "
                     f"the fraction before recording starts to have it recorded)")
            except Exception:  # never the job's problem
                pass
        return result

    set_per_process_memory_fraction.__wrapped__ = original
    set_per_process_memory_fraction.__doc__ = original.__doc__
    return set_per_process_memory_fraction


def _hook(torch, name: str, wrap) -> None:
    """torch.cuda.memory.NAME (which torch.cuda.NAME is too) replaced by wrap(it), once."""
    if getattr(getattr(torch.cuda.memory, name), "__wrapped__", None) is not None:
        return
    wrapped = wrap(getattr(torch.cuda.memory, name))
    setattr(torch.cuda.memory, name, wrapped)
    setattr(torch.cuda, name, wrapped)


def start(path: str, *, chunk_events: int = 16384, flush_interval: float = 0.5,
          buffer_events: int = 16384, verbose: bool = False) -> Recording:
    """Starts recording to `path` (replaced). Never raises for an environment problem: the returned
    Recording is then inactive and stderr says why."""
    global _active
    with _lock:
        if _active is not None and _active.active:
            _say(f"already recording to {_active.path}; not starting {path}")
            return Recording(path)
    try:
        import torch

        if not torch.cuda.is_available():
            raise RecorderUnavailable("torch.cuda is not available")
        native = extension(verbose=verbose)
        torch.cuda.init()  # the per-device allocators the tracker attaches to exist from here on
        native.attach()
        # State already there (CUDA used before recording started) becomes preexisting events.
        snapshot = torch.cuda.memory._snapshot()
        segments = [s for s in snapshot.get("segments", []) if s.get("total_size", 0) > 0]
        handle = native.open(os.fspath(path), _header(torch, bool(segments), snapshot), chunk_events,
                             max(1, int(flush_interval * 1000)), buffer_events)
        if segments:
            n_segments, n_blocks = _replay_existing_state(native, handle, segments)
            _say(f"CUDA memory was allocated before recording started: {path} begins with the allocator's "
                 f"state then ({n_segments} segments, {n_blocks} live blocks)")
        native.set_current(handle)
        _hook(torch, "empty_cache", _record_empty_cache)
        _hook(torch, "set_per_process_memory_fraction", _warn_cap_change)
    except RecorderUnavailable as e:
        _say(f"not recording to {path}: {e}")
        return Recording(path)
    except Exception as e:  # an unwritable path, a backend without trace tracking, ...
        _say(f"not recording to {path}: {e}")
        return Recording(path)
    recording = Recording(path, native, handle)
    with _lock:
        _active = recording
    return recording


def record(path: str, **options) -> Recording:
    """`with memreplay.torch.record("run.mrt"): ...`: start(), stopped when the block ends."""
    return start(path, **options)


@atexit.register
def _stop_at_exit() -> None:
    # Before the interpreter goes away: the writer may still need Python to symbolize stacks.
    recording = _active
    if recording is not None:
        recording.stop()
