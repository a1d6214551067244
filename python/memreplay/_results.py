"""What memreplay's functions return: the documents the CLI's --json writes, field for field, as
mappings (and attributes), with the names of torch.cuda.memory_stats() where one exists, and
renderings for Jupyter."""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Dict, Generic, Iterator, List, Mapping, Optional, Sequence, TypeVar, overload

from ._format import format_bytes, format_percent, html_table

# torch.cuda.memory_stats() names -> the replay's own (memreplay replay --json).
TORCH_STAT_NAMES: Dict[str, str] = {
    "reserved_bytes.all.peak": "reserved_peak",
    "allocated_bytes.all.peak": "allocated_peak",
    "requested_bytes.all.peak": "requested_peak",
    "num_device_alloc": "device_alloc_calls",
    "num_device_free": "device_free_calls",
    "num_alloc_retries": "alloc_retries",
    "num_ooms": "ooms",
}


class Document(Mapping[str, Any]):
    """A result as the CLI's --json writes it: every field by mapping access (result["field"]) and as
    an attribute (result.field); to_dict() is the document itself."""

    _aliases: Mapping[str, str] = {}

    def __init__(self, data: Dict[str, Any]):
        self._data = data

    def to_dict(self) -> Dict[str, Any]:
        """The document, as `memreplay ... --json` writes it."""
        return self._data

    def __getitem__(self, key: str) -> Any:
        return self._data[self._aliases.get(key, key)]

    def __iter__(self) -> Iterator[str]:
        yield from (alias for alias, field in self._aliases.items() if field in self._data)
        yield from self._data

    def __len__(self) -> int:
        return len(self._data) + sum(field in self._data for field in self._aliases.values())

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"{type(self).__name__} has no field {name!r}") from None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._data!r})"


class ReplayResult(Document):
    """One replay: every field of `memreplay replay --json` (reserved_peak, device_alloc_calls, ...,
    timeline), and torch.cuda.memory_stats()'s names for those it has: result["reserved_bytes.all.peak"],
    result.num_device_alloc, result.num_alloc_retries, result.num_ooms."""

    _aliases = TORCH_STAT_NAMES

    @property
    def oom(self) -> bool:
        """Whether the replay ran out of memory (its numbers then stop at oom_at_event)."""
        return self._data.get("oom_at_event") is not None

    def memory_stats(self) -> Dict[str, Any]:
        """The fields torch.cuda.memory_stats() also has, under its names."""
        return {alias: self._data[field] for alias, field in TORCH_STAT_NAMES.items()}

    def __repr__(self) -> str:
        d = self._data
        oom = f", OOM at event {d['oom_at_event']}" if self.oom else ""
        return (f"ReplayResult(policy={d['policy']!r}, reserved_peak={format_bytes(d['reserved_peak'])}, "
                f"num_device_alloc={d['device_alloc_calls']}, num_alloc_retries={d['alloc_retries']}{oom})")

    def _repr_html_(self) -> str:
        d = self._data
        rows = [
            ("policy", d["policy"]), ("device", d["device"]),
            ("reserved_bytes.all.peak", format_bytes(d["reserved_peak"])),
            ("allocated_bytes.all.peak", format_bytes(d["allocated_peak"])),
            ("requested_bytes.all.peak", format_bytes(d["requested_peak"])),
            ("num_device_alloc", d["device_alloc_calls"]), ("num_device_free", d["device_free_calls"]),
            ("num_alloc_retries", d["alloc_retries"]), ("num_ooms", d["ooms"]),
            ("unallocated at peak", format_percent(d["fragmentation_at_peak"])),
            ("OOM at event", d["oom_at_event"] if self.oom else "-"),
            ("complete", "yes" if d["complete"] else "NO"),
        ]
        return html_table(("", "value"), rows, caption="memreplay replay")


_TABLE_FIELDS = ("policy", "reserved_peak", "allocated_peak", "requested_peak", "reserved_over_requested",
                 "fragmentation_at_peak", "free_fragmentation_at_peak", "device_alloc_calls", "device_free_calls",
                 "alloc_retries", "ooms", "oom_at_event", "failed", "complete")


_Item = TypeVar("_Item")


class _DocumentSequence(Sequence[_Item], Generic[_Item]):
    """A CLI --json document that reads as the sequence of its rows (compare's results, advise's items)."""

    def __init__(self, data: Dict[str, Any], items: List[_Item]):
        self._data = data
        self._items = items

    def to_dict(self) -> Dict[str, Any]:
        """The document, as the CLI's --json writes it."""
        return self._data

    @overload
    def __getitem__(self, index: int) -> _Item: ...

    @overload
    def __getitem__(self, index: slice) -> List[_Item]: ...

    def __getitem__(self, index):  # type: ignore[no-untyped-def]
        return self._items[index]

    def __len__(self) -> int:
        return len(self._items)


class Comparison(_DocumentSequence[ReplayResult]):
    """One trace under several policies (`memreplay compare --json`): a sequence of ReplayResult in the
    order asked, the document as to_dict(), a table as to_pandas() and in Jupyter."""

    def __init__(self, data: Dict[str, Any]):
        super().__init__(data, [ReplayResult(row) for row in data["results"]])

    @property
    def best(self) -> Optional[ReplayResult]:
        """The starred replay, the document's "recommended": the lowest reserved peak without OOM among
        the policies within the call rule (call_rule: at most max_call_ratio times the current
        setting's device calls). None when none qualifies, or for a single replay."""
        recommended = self._data.get("recommended")
        for r in self._items:
            if recommended is not None and r["policy"] == recommended and r["standing"] == "qualifies":
                return r
        return None

    def rows(self) -> List[Dict[str, Any]]:
        """One dict of scalar fields per policy (what to_pandas() tabulates)."""
        return [{field: r.to_dict().get(field) for field in _TABLE_FIELDS} for r in self._items]

    def to_pandas(self):  # type: ignore[no-untyped-def]
        """A pandas.DataFrame, one row per policy (needs pandas)."""
        try:
            import pandas
        except ImportError as e:
            raise ImportError("Comparison.to_pandas() needs pandas (pip install pandas)") from e
        return pandas.DataFrame(self.rows()).set_index("policy")

    def __repr__(self) -> str:
        return "Comparison([" + ", ".join(repr(r) for r in self._items) + "])"

    def _repr_html_(self) -> str:
        best = self.best
        rows = [("*" if r is best else "", r["policy"], f"{r['reserved_over_requested']:.3f}",
                 format_bytes(r["reserved_peak"]), format_bytes(r["allocated_peak"]), format_bytes(r["requested_peak"]),
                 r["device_alloc_calls"], r["device_free_calls"], r["alloc_retries"],
                 f"OOM at event {r['oom_at_event']}" if r.oom else "-") for r in self._items]
        header = ("", "policy", "reserved ÷ requested", "reserved peak", "allocated peak", "requested peak",
                  "device mallocs", "device frees", "retries", "OOM")
        return html_table(header, rows, caption=f"memreplay compare {self._data['trace']}")


class FitResult(Document):
    """`memreplay fit --json` for one policy. Without a capacity: min_fit_bytes (the smallest capacity
    found to fit), fits_above_bytes, monotonic, probes, ...; with one: fits, oom (the first failing
    allocation with its stack) and metrics."""

    @property
    def replay(self) -> ReplayResult:
        """The replay under the capacity, or the uncapped one the search started from."""
        return ReplayResult(self._data["metrics"] if "metrics" in self._data else self._data["uncapped"])

    def __repr__(self) -> str:
        d = self._data
        if "fits" in d:
            return f"FitResult(policy={d['policy']!r}, capacity={format_bytes(d['capacity'])}, fits={d['fits']})"
        return (f"FitResult(policy={d['policy']!r}, min_fit_bytes={d['min_fit_bytes']} "
                f"({format_bytes(d['min_fit_bytes'])}), monotonic={d['monotonic']})")


class BoundResult(Document):
    """`memreplay bound --json`: the requested peak (the floor no allocator beats) and the footprint of
    the best static placement found with every lifetime known."""

    def __repr__(self) -> str:
        d = self._data
        return (f"BoundResult(requested_peak={format_bytes(d['requested_peak'])}, "
                f"greedy_rounded={format_bytes(d['greedy_rounded'])})")


@dataclasses.dataclass(frozen=True)
class AdviceItem:
    """One thing to change: a one-line title, the setting to paste (empty for a finding that is not a
    setting), and the numbers behind it."""

    title: str
    paste: str
    evidence: str

    @property
    def setting(self) -> str:
        """What to set, e.g. 'PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True' ('' if none)."""
        return self.paste


class Advice(_DocumentSequence[AdviceItem]):
    """`memreplay advise --json`, ranked: a sequence of AdviceItem (also .items), and the document's
    other fields as attributes (current, candidates, peak_stacks, empty_cache_calls); str() is what the
    CLI prints, to_dict() the document."""

    def __init__(self, data: Dict[str, Any], text: str):
        super().__init__(data, [AdviceItem(i["title"], i["paste"], i["evidence"]) for i in data["items"]])
        self._text = text
        self.items = self._items

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name not in self._data:
            raise AttributeError(name)
        return self._data[name]

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return f"Advice({[i.title for i in self.items]!r})"

    def _repr_html_(self) -> str:
        rows = [(n + 1, i.title, i.setting or "-", i.evidence) for n, i in enumerate(self.items)]
        return html_table(("", "advice", "setting", "evidence"), rows, caption=f"memreplay advise {self._data['trace']}")


class CheckResult(Document):
    """`memreplay check --json` (every case with its status and findings, the tolerances, the
    baseline update) as to_dict(), with regressions (what the CLI prints for each failure, one line
    each), failures, passed, and the JUnit and Markdown views. True when it passed."""

    def __init__(self, data: Dict[str, Any], junit: str, markdown: str, failures: int, passed: bool,
                 regressions: List[str]):
        super().__init__(data)
        self.junit = junit
        self.markdown = markdown
        self.failures = failures
        self.regressions = regressions
        self._passed = passed

    @property
    def passed(self) -> bool:
        """No case failed and no baseline update was refused (the CLI's exit status 0)."""
        return self._passed

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        return f"CheckResult(passed={self.passed}, failures={self.failures}, regressions={self.regressions!r})"

    def _repr_markdown_(self) -> str:
        return self.markdown


class Trace(os.PathLike):
    """A trace (.mrt) memreplay replays: the user's file, or one imported from a snapshot (a file or
    the dict torch.cuda.memory._snapshot() returns) into a temporary file removed with this object.
    Usable wherever a path is (os.fspath)."""

    def __init__(self, file: Any, name: str):
        self._file = file  # memreplay._core.TraceFile: owns a temporary file
        self.name = name
        self._info: Optional[Dict[str, Any]] = None

    @property
    def path(self) -> str:
        """The .mrt file."""
        return self._file.path

    @property
    def temporary(self) -> bool:
        """Whether the file is a temporary import, removed with this object."""
        return self._file.owned

    def __fspath__(self) -> str:
        return self.path

    def info(self) -> Dict[str, Any]:
        """What `memreplay info --json` says: events per kind, devices, the peak of live requested bytes
        and the stacks live then."""
        if self._info is None:
            from . import _core

            self._info = _core.trace_info(self.path)
        return self._info

    def save(self, path: "str | os.PathLike[str]") -> str:
        """Copies the trace to `path` (a .mrt file that outlives this object), written as the CLI
        writes every file: whole or not at all. Returns the path."""
        from . import _core

        path = os.fspath(path)
        _core.copy_to_output_file(self.path, path)
        return path

    def __repr__(self) -> str:
        return f"Trace({self.name!r}, path={self.path!r})"

    def _repr_html_(self) -> str:
        info = self.info()
        rows = []
        for d in info["devices"]:
            events = sum(d["events_per_kind"].values())
            top = d["top_stacks_at_peak"][0]["stack"] if d["top_stacks_at_peak"] else []
            where = f"{top[0]['filename']}:{top[0]['line']} {top[0]['name']}" if top else "-"
            rows.append((d["device"], events, len(d["streams"]), f"{d['duration_ns'] / 1e9:.3f} s",
                         format_bytes(d["peak_requested_bytes"]), where))
        header = ("device", "events", "streams", "duration", "peak requested", "largest stack at the peak")
        caption = f"memreplay trace {self.name} ({info['source']}{'' if info['complete'] else ', INCOMPLETE'})"
        return html_table(header, rows, caption=caption)
