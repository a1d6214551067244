"""memreplay: GPU memory predicted by replaying allocation traces offline, deterministically.

    import memreplay
    trace = memreplay.load(torch.cuda.memory._snapshot())   # or "run.mrt", "snapshot.pickle.xz"
    result = memreplay.replay(trace, policy="pytorch:expandable_segments:True", capacity="24GB")
    result["reserved_bytes.all.peak"], result.num_device_alloc, result.num_ooms
    memreplay.compare(trace, ["pytorch", "pytorch:expandable_segments:True"]).to_pandas()
    memreplay.fit(trace).min_fit_bytes          # the smallest capacity it fits in
    memreplay.advise(trace)[0].setting          # what to paste, ranked, with the evidence

Every replay starts from an empty device, so its numbers are the same on every run, whatever ran
before. The functions call the C++ libraries the `memreplay` command-line tool calls (installed
with this package) and return the documents its --json writes. memreplay.torch records PyTorch's
caching allocator live; memreplay.pytest_plugin gates tests on reserved memory.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

# The API lives in _api (it needs the extension module _core); memreplay.torch, the recorder,
# does not, so neither is imported until a name of the API is first used.
_API = {
    "load", "replay", "compare", "fit", "fits", "bound", "advise", "check", "report", "export", "policies",
    "load_plugin", "parse_bytes", "InputError", "MemreplayWarning",
}
_RESULTS = {"Trace", "ReplayResult", "Comparison", "FitResult", "BoundResult", "Advice", "AdviceItem", "CheckResult"}

__all__ = sorted(_API | _RESULTS)


def __getattr__(name: str) -> Any:
    if name in _API:
        from . import _api

        value = getattr(_api, name)
    elif name in _RESULTS:
        from . import _results

        value = getattr(_results, name)
    else:
        raise AttributeError(f"module 'memreplay' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list:
    return sorted(set(globals()) | _API | _RESULTS)
