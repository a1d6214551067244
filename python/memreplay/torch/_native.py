"""Finding and building the native half of the PyTorch recorder.

Two pieces, found at run time:
- libmemreplay_record.so, built with memreplay (recorder/live/CMakeLists.txt): the recording core and
  the .mrt writer, self-contained (its own zstd and C++ runtime, hidden). Found through
  $MEMREPLAY_RECORD_LIB, else in a build*/recorder/live/ or lib/ directory above this package. Its
  trace format is checked against this package's (check_format) when the package is imported, if
  the library is found then, and again before it is used.
- the tracker extension (csrc/tracker.cpp), compiled here against the installed torch with
  torch.utils.cpp_extension the first time (cached by torch in $TORCH_EXTENSIONS_DIR), with the
  header recorder/live/memreplay_record.h found through $MEMREPLAY_SOURCE_DIR or above this package.
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

_HERE = Path(__file__).resolve().parent
_EXTENSION_NAME = "memreplay_torch_tracker"
_extension = None

# The trace format this package writes: the version, and the EventKind / EventFlag numbers it
# records with, by their names in proto/event.h. check_format() holds them against what
# libmemreplay_record.so reports.
FORMAT_MAJOR = 1
KINDS = {"alloc": 1, "free_requested": 2, "segment_alloc": 4, "segment_map": 6, "empty_cache": 10}
FLAGS = {"preexisting": 1}


class RecorderUnavailable(RuntimeError):
    """The live recorder cannot run here; the message says why and what to do."""


class FormatMismatch(ImportError):
    """This package and libmemreplay_record.so disagree on the trace format: they come from
    different versions of memreplay."""


def _format_of(library) -> tuple:
    """(major, {kind: number}, {flag: bit}) as the library reports them, for this package's names."""
    library.memreplay_format_version.restype = ctypes.c_uint32
    library.memreplay_format_version.argtypes = [ctypes.c_void_p]
    for function in (library.memreplay_event_kind, library.memreplay_event_flag):
        function.restype = ctypes.c_uint32
        function.argtypes = [ctypes.c_char_p]
    major = library.memreplay_format_version(None)
    kinds = {name: library.memreplay_event_kind(name.encode()) for name in KINDS}
    flags = {name: library.memreplay_event_flag(name.encode()) for name in FLAGS}
    return major, kinds, flags


def check_format(path: Path, library=None) -> None:
    """Raises FormatMismatch unless the library at path writes this package's format version and
    numbers the kinds and flags as this package does. library: the loaded library (ctypes), if
    the caller has it."""
    try:
        library = library if library is not None else ctypes.CDLL(str(path))
        major, kinds, flags = _format_of(library)
    except (OSError, AttributeError) as e:
        raise FormatMismatch(f"{path}: cannot ask it for its trace format ({e}); it may be the library "
                             "of an older memreplay: rebuild memreplay or set MEMREPLAY_RECORD_LIB") from e
    wrong = []
    if major != FORMAT_MAJOR:
        wrong.append(f"format version {major}, this package {FORMAT_MAJOR}")
    for what, ours, theirs in (("kind", KINDS, kinds), ("flag", FLAGS, flags)):
        wrong += [f"{what} {name} = {theirs[name]}, this package {number}"
                  for name, number in ours.items() if theirs[name] != number]
    if wrong:
        raise FormatMismatch(f"{path} and the memreplay.torch package at {_HERE} come from different "
                             f"memreplay versions ({'; '.join(wrong)}): use the package of the memreplay "
                             "that built the library")


def _ancestors():
    return [_HERE, *_HERE.parents]


def find_built_library(name: str, env_var: str, build_dir: str, how_to_build: str, error: type[Exception]) -> Path:
    """A library memreplay builds: $env_var, else lib/NAME, NAME or build*/BUILD_DIR/NAME in this
    package's directory or one above it. Raises `error`, saying how to build it, when none is there."""
    env = os.environ.get(env_var)
    if env:
        path = Path(env)
        if not path.is_file():
            raise error(f"{env_var}={env}: no such file")
        return path
    for base in _ancestors():
        candidates = [base / "lib" / name, base / name]
        candidates += sorted(base.glob(f"build*/{build_dir}/{name}"))
        for candidate in candidates:
            if candidate.is_file():
                return candidate
    raise error(f"cannot find {name}: build memreplay ({how_to_build}) or set {env_var}")


def find_record_library() -> Path:
    return find_built_library("libmemreplay_record.so", "MEMREPLAY_RECORD_LIB", "recorder/live", "cmake --build build",
                              RecorderUnavailable)


def _find_include_dir() -> Path:
    roots = [Path(os.environ["MEMREPLAY_SOURCE_DIR"])] if os.environ.get("MEMREPLAY_SOURCE_DIR") else []
    for base in roots + _ancestors():
        for candidate in (base / "recorder" / "live", base / "csrc", base / "include"):
            if (candidate / "memreplay_record.h").is_file():
                return candidate
    raise RecorderUnavailable(
        "cannot find memreplay_record.h (recorder/live/ of the memreplay sources): set MEMREPLAY_SOURCE_DIR")


def _check_torch_has_tracker(torch) -> None:
    header = Path(torch.__file__).parent / "include" / "c10" / "cuda" / "CUDACachingAllocator.h"
    if header.is_file() and "attachAllocatorTraceTracker" not in header.read_text(errors="replace"):
        raise RecorderUnavailable(
            f"torch {torch.__version__} has no CUDACachingAllocator::attachAllocatorTraceTracker (PyTorch >= 2.1 "
            "has it); record with `memreplay record` (the CUDA interposer) instead")


def extension(verbose: bool = False):
    """The compiled tracker module, with libmemreplay_record.so loaded into it."""
    global _extension
    if _extension is not None:
        return _extension
    import torch
    from torch.utils import cpp_extension

    _check_torch_has_tracker(torch)
    library = find_record_library()
    check_format(library)
    include_dir = _find_include_dir()
    try:
        module = cpp_extension.load(
            name=_EXTENSION_NAME,
            sources=[str(_HERE / "csrc" / "tracker.cpp")],
            extra_include_paths=[str(include_dir)],
            extra_cflags=["-O2"],
            extra_ldflags=["-ldl"],
            with_cuda=True,
            verbose=verbose,
        )
    except Exception as e:  # a compiler error, no CUDA_HOME, no ninja, ...
        raise RecorderUnavailable(f"cannot build the PyTorch recorder extension against torch "
                                  f"{torch.__version__}: {e}") from e
    module.load(str(library))
    _extension = module
    return module
